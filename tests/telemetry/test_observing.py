"""The shared observer: samples over a grid of schedule times from batched range queries, the entry point's
rates over a window, and the rule pack evaluated from the schedule time it starts at."""

from __future__ import annotations

import math

from orchestrator.telemetry.fake import FakeQuerier
from orchestrator.telemetry.observing import Observer, by_time, grid
from orchestrator.telemetry.probes import HealthyWhen, ProbeQuery
from orchestrator.telemetry.querying import RangeSeries
from orchestrator.telemetry.rules import AlertRule, RulePack

ORIGIN = 1_000_000.0
NO_RULES = RulePack(version="0", sha256="", rules=(), files=())


def _fake(ranges: dict[str, object], *, instants: dict[str, float | None] | None = None) -> FakeQuerier:
    """Range answers given as functions of schedule time; an instant query nobody scripted is refused: a
    sample must not cost a request."""
    shifted = {k: (lambda t, f=v: f(t - ORIGIN)) if callable(v) else v for k, v in ranges.items()}
    return FakeQuerier(instants=instants or {}, ranges=shifted, refuse_unscripted=True)  # type: ignore[arg-type]


def _observer(prometheus: FakeQuerier, *, namespace: str, rules: RulePack = NO_RULES) -> Observer:
    return Observer(
        querier=prometheus,
        rules=rules,
        namespace=namespace,
        entry_point="frontend",
        origin_epoch_s=ORIGIN,
        step_s=15,
    )


def test_the_grid_holds_the_multiples_of_the_step_after_the_start_up_to_the_end() -> None:
    assert grid(0.0, 60.0, 15.0) == [15.0, 30.0, 45.0, 60.0]
    assert grid(17.0, 44.0, 15.0) == [30.0]
    assert grid(60.0, 60.0, 15.0) == []


def test_range_points_are_grouped_by_schedule_time() -> None:
    series = [RangeSeries(labels={"a": "2"}, points=((ORIGIN + 15, 2.0),)),
              RangeSeries(labels={"a": "1"}, points=((ORIGIN + 15, 1.0), (ORIGIN + 30, 3.0)))]  # fmt: skip
    assert by_time(series, origin=ORIGIN) == {15.0: [1.0, 2.0], 30.0: [3.0]}


def test_service_samples_come_from_four_range_queries_per_boundary() -> None:
    prometheus = _fake(
        {
            'status_code="STATUS_CODE_ERROR"': 2.0,
            'le="2500"': 7.0,
            "duration_milliseconds_count": 10.0,
            "calls_total": 10.0,
        }  # fmt: skip
    )
    observer = _observer(prometheus, namespace="ns")
    samples = observer.service(after=0.0, until=120.0)
    assert [s.at for s in samples] == [15.0 * k for k in range(1, 9)]
    assert len(prometheus.range_calls) == 4
    assert all(call[1] == ORIGIN + 15 and call[2] == ORIGIN + 120 for call in prometheus.range_calls)
    first = samples[0]
    assert (first.q, first.e, first.l) == (10.0, 0.2, 0.3)


def test_probe_samples_judge_every_grid_time_and_no_data_counts_as_healthy() -> None:
    probe = ProbeQuery(query='rate(x{namespace="shop"}[2m])', healthy=HealthyWhen(op="<", value=0.5))
    prometheus = _fake({"rate(x": lambda t: None if t < 30 else (0.9 if t < 60 else 0.1)})
    samples = _observer(prometheus, namespace="shop").probe(probe, after=0.0, until=75.0)
    assert [(s.at, s.healthy) for s in samples] == [
        (15.0, True), (30.0, False), (45.0, False), (60.0, True), (75.0, True)
    ]  # fmt: skip
    assert samples[0].value is None
    assert len(prometheus.range_calls) == 1


def test_entry_rates_are_two_instant_queries_over_the_window_before_the_time_asked() -> None:
    prometheus = _fake({}, instants={'status_code="STATUS_CODE_ERROR"': 1.5, "calls_total": 12.0})
    assert _observer(prometheus, namespace="shop").entry_rates(at=600.0, seconds=300.0) == (12.0, 1.5)
    assert [at for _, at in prometheus.instant_calls] == [ORIGIN + 600.0, ORIGIN + 600.0]
    for query, _ in prometheus.instant_calls:
        assert "[300s]" in query and 'namespace="shop"' in query and 'service_name="frontend"' in query


def test_entry_rates_without_data_or_with_a_value_that_is_not_finite_are_zero() -> None:
    prometheus = _fake(
        {}, instants={'status_code="STATUS_CODE_ERROR"': None, "calls_total": math.nan}
    )
    assert _observer(prometheus, namespace="shop").entry_rates(at=600.0, seconds=300.0) == (0.0, 0.0)


def test_alerts_are_evaluated_from_the_schedule_time_the_observer_starts_at() -> None:
    rule = AlertRule(
        name="XHigh", group="g", expr="x > 1", interval=15.0, for_seconds=0.0, keep_firing_for=0.0,
        labels=(), annotations=(), source="test",
    )  # fmt: skip
    prometheus = _fake({"x > 1": lambda t: 2.0 if t >= 60 else None})
    observer = Observer(
        querier=prometheus, rules=RulePack(version="0", sha256="", rules=(rule,), files=()), namespace="shop",
        entry_point="frontend", origin_epoch_s=ORIGIN, step_s=15, start_s=30.0,
    )  # fmt: skip
    added = observer.alerts(until=120.0)
    assert len(prometheus.range_calls) == 1
    first_evaluation = prometheus.range_calls[0][1]
    assert ORIGIN + 30.0 < first_evaluation <= ORIGIN + 45.0
    assert [(record.rule, record.state) for record in added] == [("XHigh", "firing")]
    assert ORIGIN + 60.0 <= added[0].starts_at < ORIGIN + 75.0
    assert observer.alerts(until=120.0) == []
