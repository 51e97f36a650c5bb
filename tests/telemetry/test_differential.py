"""Differential test: Prometheus' own rule manager and the project's evaluator, on the same data, agree.

Prometheus evaluates a small rule file every second on the wall clock. The whole scenario is pushed before
it starts, with timestamps in the near future: a query at time t only sees samples up to t, so Prometheus'
rule manager sees exactly what the evaluator sees afterwards, however late the test process gets scheduled.
Prometheus' evaluation times carry a group offset, so transitions may differ by up to one interval.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import PrometheusServer, start_prometheus
from tests.telemetry.telemetry_support import labels, need_binary, push, steps, write_pack

RULES = """
groups:
  - name: differential
    interval: 1s
    rules:
      - alert: DiffHigh
        expr: diff_metric > 0.5
        for: 3s
        labels: {severity: warning}
        annotations: {summary: "{{ $labels.name }} at {{ $value }}"}
      - alert: DiffKeep
        expr: diff_metric > 0.5
        for: 1s
        keep_firing_for: 3s
        labels: {severity: critical, source: "{{ $labels.name }}"}
        annotations: {summary: "kept {{ $value | humanize }}"}
      - alert: DiffImmediate
        expr: sum by (name) (diff_metric) > 1
        labels: {severity: warning}
        annotations: {summary: "{{ $labels.name }}"}
"""
LEAD = 4.0  # seconds between pushing and the scenario's start: Prometheus evaluates a few empty rounds first
LENGTH = 20.0
INTERVAL = 1.0


def metric_a(offset: float) -> float:
    # up 3-10 s, a 1 s blip at 12 s (resets keep_firing_for, too short to fire DiffHigh), then down
    return 1.0 if 3 <= offset < 10 or 12 <= offset < 13 else 0.0


def metric_b(offset: float) -> float:
    # up from 5 s to the end, with a value above 1 between 7 and 9 s for DiffImmediate
    return 0.0 if offset < 5 else (1.5 if 7 <= offset < 9 else 0.75)


Episode = tuple[float | None, float | None, float]  # pending since, firing since, last seen


def prometheus_episodes(
    server: PrometheusServer, *, start: float, end: float, missed: int = 0
) -> dict[tuple[str, ...], list[Episode]]:
    """Alert episodes from the ALERTS series Prometheus' rule manager wrote, at its own evaluation times.

    A round Prometheus skipped (``missed``, a loaded machine) leaves a gap in ALERTS without the alert
    having resolved, so a gap splits an episode only when it is longer than the skipped rounds explain."""
    window = int(end - start + 5)
    answer = httpx.get(
        f"{server.url}/api/v1/query", params={"query": f"ALERTS[{window}s]", "time": end}, timeout=10
    )
    answer.raise_for_status()
    samples: dict[tuple[str, ...], list[tuple[float, str]]] = defaultdict(list)
    for series in answer.json()["data"]["result"]:
        metric = dict(series["metric"])
        state = metric.pop("alertstate")
        metric.pop("__name__")
        key = tuple(f"{k}={v}" for k, v in sorted(metric.items()))
        samples[key].extend((float(t), state) for t, _ in series["values"])
    episodes: dict[tuple[str, ...], list[Episode]] = {}
    for key, points in samples.items():
        points.sort()
        runs: list[list[tuple[float, str]]] = []
        for t, state in points:
            if not runs or t - runs[-1][-1][0] > (1.5 + missed) * INTERVAL:
                runs.append([])
            runs[-1].append((t, state))
        episodes[key] = [
            (
                # an alert without `for` fires at once: Prometheus writes no pending sample for it
                next((t for t, s in run if s == "pending"), run[0][0]),
                next((t for t, s in run if s == "firing"), None),
                run[-1][0],
            )
            for run in runs
        ]
    return episodes


def evaluator_episodes(evaluator: AlertEvaluator) -> dict[tuple[str, ...], list[Episode]]:
    """The same episodes from the evaluator's transitions: pending start, firing start, last active time."""
    episodes: dict[tuple[str, ...], list[Episode]] = defaultdict(list)
    open_: dict[tuple[str, ...], list[float | None]] = {}
    for transition in evaluator.transitions:
        key = tuple(f"{k}={v}" for k, v in transition.alert.labels)
        if transition.kind == "pending":
            open_[key] = [transition.at, None]
        elif transition.kind == "firing":
            open_[key][1] = transition.at
        else:  # resolved or cancelled at this evaluation: it was last active one interval before
            pending, firing = open_.pop(key)
            episodes[key].append((pending, firing, transition.at - INTERVAL))
    return dict(episodes)


def wait_for_evaluation(server: PrometheusServer, *, past: float, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        groups = httpx.get(f"{server.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
        last = min(
            datetime.fromisoformat(g["lastEvaluation"].replace("Z", "+00:00")).timestamp() for g in groups
        )
        if last > past:
            return
        time.sleep(0.25)
    pytest.fail(f"Prometheus did not evaluate past {past} within {timeout} s")


def missed_iterations(server: PrometheusServer) -> int:
    """Rule-group rounds Prometheus skipped because the previous one overran (a loaded machine)."""
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("prometheus_rule_group_iterations_missed_total")
    )


def close(a: float | None, b: float | None, *, tolerance: float) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= tolerance)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_evaluator_reports_what_prometheus_rule_manager_reports(tmp_path: Path) -> None:
    need_binary("prometheus")
    pack = write_pack(tmp_path / "pack", RULES)
    server = start_prometheus(tmp_path, rule_files=[pack / "rules.yaml"], evaluation_interval="1s")
    try:
        start = float(int(time.time() + LEAD))
        end = start + LENGTH
        push(
            server,
            {
                labels("diff_metric", name="a"): steps(start, end + 10, 0.5, lambda t: metric_a(t - start)),
                labels("diff_metric", name="b"): steps(start, end + 10, 0.5, lambda t: metric_b(t - start)),
            },
        )
        if time.time() > start - 0.5:
            # Prometheus may already have evaluated the scenario's first seconds without its samples.
            pytest.skip(f"the machine stalled for more than {LEAD} s while the scenario was being written")
        time.sleep(max(0.0, end + 1.0 - time.time()))
        wait_for_evaluation(server, past=end, timeout=60)
        missed = missed_iterations(server)
        expected = prometheus_episodes(server, start=start, end=end, missed=missed)
        # A skipped round delays Prometheus' view of a transition by one more interval.
        tolerance = INTERVAL * (1 + missed) + 0.01
        evaluator = AlertEvaluator(
            load_rule_pack(pack), PrometheusQuerier(server.url), start=start - INTERVAL
        )
        evaluator.evaluate(until=end)
        active_annotations = {
            tuple(f"{k}={v}" for k, v in sorted(a["labels"].items())): a["annotations"]
            for a in httpx.get(f"{server.url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
        }
    finally:
        server.stop()

    got = evaluator_episodes(evaluator)
    for _, alert in evaluator.active():  # still active at the end: close them at the last evaluation
        got.setdefault(tuple(f"{k}={v}" for k, v in alert.labels), []).append(
            (alert.active_at, alert.fired_at, end)
        )
    assert sorted(got) == sorted(expected)
    for key in expected:
        theirs, ours = expected[key], sorted(got[key], key=lambda e: e[0] or 0)
        assert len(theirs) == len(ours), (key, theirs, ours)
        for (p1, f1, last1), (p2, f2, last2) in zip(theirs, ours, strict=True):
            assert close(p1, p2, tolerance=tolerance), (key, theirs, ours)
            assert close(f1, f2, tolerance=tolerance), (key, theirs, ours)
            if (
                last1 < end - 1.5 * INTERVAL
            ):  # an episode that ended inside the scenario ended at the same time
                assert close(last1, last2, tolerance=tolerance), (key, theirs, ours)
    # the scenario exercises every transition kind
    kinds = {t.kind for t in evaluator.transitions}
    assert kinds == {"pending", "firing", "resolved", "cancelled"}
    # annotations of what is still firing at the end render as Prometheus renders them
    for _, alert in evaluator.active():
        key = tuple(f"{k}={v}" for k, v in alert.labels)
        assert dict(alert.annotations) == active_annotations[key]
