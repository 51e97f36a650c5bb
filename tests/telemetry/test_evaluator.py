"""The evaluator against a real Prometheus holding series pushed at simulated (past) timestamps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.telemetry.evaluating import AlertEvaluator, evaluation_times
from orchestrator.telemetry.querying import PrometheusQuerier, RangeSeries
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import PrometheusServer
from tests.telemetry.telemetry_support import labels, push, running_prometheus, steps, write_pack

T0 = 1_767_225_600.0  # simulated run origin, 2026-01-01T00:00:00Z

RULES = """
groups:
  - name: errors
    interval: 15s
    rules:
      - alert: EvalHighErrors
        expr: sum by (namespace, service) (eval_errors) > 5
        for: 1m
        labels: {severity: critical}
        annotations: {summary: "{{ $labels.service }} has {{ $value }} errors"}
      - alert: EvalBroken
        expr: sum by (namespace (eval_errors)
        labels: {severity: warning}
        annotations: {summary: "never"}
  - name: slow
    interval: 30s
    rules:
      - alert: EvalSlow
        expr: eval_latency > 1
        for: 30s
        keep_firing_for: 1m
        labels: {severity: warning}
        annotations: {summary: "{{ $labels.service }} p99 {{ printf \\"%.1f\\" $value }} s"}
"""


def errors_at(t: float) -> float:
    """10 errors between minutes 2 and 6 and again between 10 and 12, else 0."""
    minute = (t - T0) / 60
    return 10.0 if 2 <= minute < 6 or 10 <= minute < 12 else 0.0


def latency_at(t: float) -> float:
    minute = (t - T0) / 60
    return 2.5 if 3 <= minute < 5 else 0.2


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    for server in running_prometheus(tmp_path_factory):
        push(
            server,
            {
                labels("eval_errors", namespace="shop", service="cart"): steps(T0, T0 + 1200, 5, errors_at),
                labels("eval_latency", namespace="shop", service="cart"): steps(T0, T0 + 1200, 5, latency_at),
            },
        )
        yield server


@pytest.fixture
def pack_dir(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "pack", RULES)


def run(server: PrometheusServer, pack_dir: Path, boundaries: list[float]) -> AlertEvaluator:
    evaluator = AlertEvaluator(load_rule_pack(pack_dir), PrometheusQuerier(server.url), start=T0)
    for boundary in boundaries:
        evaluator.evaluate(until=boundary)
    return evaluator


def test_evaluation_times_are_multiples_of_the_interval_from_time_zero() -> None:
    assert evaluation_times(after=100.0, until=160.0, interval=15) == [105.0, 120.0, 135.0, 150.0]
    assert evaluation_times(after=105.0, until=105.0, interval=15) == []
    assert evaluation_times(after=0.1, until=0.35, interval=0.1) == [0.2, 0.3]


def test_alerts_fire_and_resolve_at_the_expected_evaluation_times(
    prometheus: PrometheusServer, pack_dir: Path
) -> None:
    evaluator = run(prometheus, pack_dir, [T0 + 1200])
    got = [
        (r.rule, r.state, r.starts_at - T0, None if r.ends_at is None else r.ends_at - T0)
        for r in evaluator.history
    ]
    assert got == [
        ("EvalHighErrors", "firing", 180.0, None),
        ("EvalSlow", "firing", 210.0, None),
        ("EvalHighErrors", "resolved", 180.0, 360.0),
        ("EvalSlow", "resolved", 210.0, 360.0),  # condition gone at 300, kept firing for 1m
        ("EvalHighErrors", "firing", 660.0, None),
        ("EvalHighErrors", "resolved", 660.0, 720.0),
    ]
    first = evaluator.history[0]
    assert first.labels == {
        "alertname": "EvalHighErrors",
        "namespace": "shop",
        "service": "cart",
        "severity": "critical",
    }
    assert first.annotations == {"summary": "cart has 10 errors"}
    assert first.active_at == T0 + 120
    assert evaluator.history[1].annotations == {"summary": "cart p99 2.5 s"}
    assert evaluator.history[0].id == evaluator.history[2].id != evaluator.history[4].id


def test_the_history_does_not_depend_on_where_boundaries_fall(
    prometheus: PrometheusServer, pack_dir: Path
) -> None:
    once = run(prometheus, pack_dir, [T0 + 1200])
    stepped = run(prometheus, pack_dir, [T0 + 7 + 113 * k for k in range(11)])
    assert [r.model_dump() for r in stepped.history] == [r.model_dump() for r in once.history]


def test_each_boundary_returns_only_the_new_records(prometheus: PrometheusServer, pack_dir: Path) -> None:
    evaluator = AlertEvaluator(load_rule_pack(pack_dir), PrometheusQuerier(prometheus.url), start=T0)
    assert evaluator.evaluate(until=T0 + 170) == []
    assert [r.rule for r in evaluator.evaluate(until=T0 + 240)] == ["EvalHighErrors", "EvalSlow"]
    assert {name for name, _ in evaluator.active()} == {"EvalHighErrors", "EvalSlow"}
    assert evaluator.evaluate(until=T0 + 240) == []


class TimedQuerier:
    """Answers from Prometheus, notes the expressions in the order asked, and makes each query last the
    seconds ``cost`` gives for it on a clock of its own (a machine's speed plays no part)."""

    def __init__(self, inner: PrometheusQuerier, cost: dict[str, float]) -> None:
        self.inner, self.cost = inner, cost
        self.now = 0.0
        self.asked: list[str] = []

    def clock(self) -> float:
        return self.now

    def range(self, query: str, *, start: float, end: float, step: float) -> list[RangeSeries]:
        self.asked.append(query)
        self.now += self.cost.get(query, 0.001)
        return self.inner.range(query, start=start, end=end, step=step)


def test_the_slowest_queries_of_the_last_window_go_first_and_change_no_answer(
    prometheus: PrometheusServer, pack_dir: Path
) -> None:
    pack = load_rule_pack(pack_dir)
    in_order = [rule.expr for rule in pack.rules]
    slow = in_order[-1]
    querier = TimedQuerier(PrometheusQuerier(prometheus.url), {slow: 5.0})
    evaluator = AlertEvaluator(pack, querier, start=T0, workers=1, clock=querier.clock)
    for boundary in (T0 + 170, T0 + 240, T0 + 1200):
        evaluator.evaluate(until=boundary)
    first, second = querier.asked[: len(in_order)], querier.asked[len(in_order) : 2 * len(in_order)]
    assert first == in_order  # nothing measured yet: the pack's order
    assert second == [slow, *in_order[:-1]]
    plain = run(prometheus, pack_dir, [T0 + 170, T0 + 240, T0 + 1200])
    assert [r.model_dump() for r in evaluator.history] == [r.model_dump() for r in plain.history]
    assert evaluator.failures == plain.failures


def test_a_rule_prometheus_rejects_is_recorded_and_the_others_go_on(
    prometheus: PrometheusServer, pack_dir: Path
) -> None:
    evaluator = run(prometheus, pack_dir, [T0 + 300])
    assert {f.rule for f in evaluator.failures} == {"EvalBroken"}
    assert "parse error" in evaluator.failures[0].message
    assert {r.rule for r in evaluator.history} == {"EvalHighErrors", "EvalSlow"}


def test_pending_transitions_are_kept_apart_from_the_history(
    prometheus: PrometheusServer, pack_dir: Path
) -> None:
    evaluator = run(prometheus, pack_dir, [T0 + 200])
    kinds = [(t.rule, t.kind, t.at - T0) for t in evaluator.transitions]
    assert kinds == [
        ("EvalHighErrors", "pending", 120.0),
        ("EvalHighErrors", "firing", 180.0),
        ("EvalSlow", "pending", 180.0),
    ]
    assert [r.rule for r in evaluator.history] == ["EvalHighErrors"]


TWICE = """
groups:
  - name: errors
    interval: 15s
    rules:
      - alert: EvalTwice
        expr: '{__name__=~"eval_errors|eval_latency", service="cart"}'
"""


def test_each_rule_counts_its_windows_and_the_windows_that_failed_once_each(
    prometheus: PrometheusServer, pack_dir: Path, tmp_path: Path
) -> None:
    # The repeated boundary has nothing new to evaluate, except the failed rule's window, which is retried.
    evaluator = run(prometheus, pack_dir, [T0 + 120, T0 + 240, T0 + 240, T0 + 360])
    assert [(h.rule, h.group, h.evaluations, h.failures) for h in evaluator.health()] == [
        ("EvalHighErrors", "errors", 3, 0), ("EvalBroken", "errors", 4, 4), ("EvalSlow", "slow", 3, 0),
    ]  # fmt: skip
    assert [(f.rule, f.at - T0) for f in evaluator.failures] == [
        ("EvalBroken", 120.0), ("EvalBroken", 240.0), ("EvalBroken", 240.0), ("EvalBroken", 360.0),
    ]  # fmt: skip
    port = prometheus.url.rsplit(":", 1)[-1]
    for failure in evaluator.failures:  # what Prometheus said, not where it listens
        assert failure.message.startswith("Prometheus rejected the query: ")
        assert "parse error" in failure.message
        assert port not in failure.message

    # Two series that become one alert are a failure at every evaluation time, journaled once per window.
    twice = run(prometheus, write_pack(tmp_path / "twice", TWICE), [T0 + 120, T0 + 240])
    assert [(h.evaluations, h.failures) for h in twice.health()] == [(2, 2)]
    assert [(f.rule, f.at - T0) for f in twice.failures] == [("EvalTwice", 15.0), ("EvalTwice", 135.0)]
    assert "same labelset" in twice.failures[0].message
