"""The whole rule pack over an hour of a healthy twin: the thresholds leave room for its normal noise.

The evaluation starts after a warm-up, as a run's does: a cold start (pods Pending, Java services not yet
ready) is a real outage, not noise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import start_prometheus
from orchestrator.twin.launch import start_twin
from orchestrator.twin.timefmt import EPOCH
from tests.telemetry.telemetry_support import need_binary

WARM_UP = 300.0
HOUR = 3600.0
BOUNDARY = 120.0


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("app", ["online-boutique", "astronomy-shop"])
def test_a_healthy_twin_hour_raises_no_alert(app: str, tmp_path: Path) -> None:
    need_binary("prometheus")
    origin = EPOCH.timestamp()
    with (
        start_prometheus(tmp_path) as prometheus,
        start_twin(
            app, seed=5, kubeconfig=tmp_path / "kubeconfig", remote_write_url=prometheus.remote_write_url
        ) as twin,
    ):
        twin.advance(WARM_UP)
        evaluator = AlertEvaluator(
            load_rule_pack(), PrometheusQuerier(prometheus.url), start=origin + WARM_UP
        )
        for _ in range(int(HOUR / BOUNDARY)):
            now = twin.advance(BOUNDARY)
            evaluator.evaluate(until=origin + now)
        queried = PrometheusQuerier(prometheus.url).instant(
            'count(traces_span_metrics_calls_total{span_kind="SPAN_KIND_SERVER"})', at=origin + now
        )
    assert now == WARM_UP + HOUR
    assert queried and queried[0].value > 5  # the twin did emit span metrics for the pack to read
    assert evaluator.failures == []
    fired = [(r.rule, r.labels.get("service"), r.starts_at - origin) for r in evaluator.history]
    assert fired == []
