"""query_metrics against a real Prometheus fed by the twin's remote write."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.server import start_prometheus
from tests.interface.world import running_world

RATE = 'sum by (service_name) (rate(traces_span_metrics_calls_total{namespace="online-boutique"}[1m]))'


@pytest.mark.slow
def test_query_metrics_answers_instant_and_range_queries_in_schedule_time(tmp_path: Path) -> None:
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed")
    with start_prometheus(tmp_path / "prometheus") as server:
        querier = PrometheusQuerier(server.url)
        with running_world(
            "online-boutique", directory=tmp_path, remote_write_url=server.remote_write_url, querier=querier
        ) as world:
            world.advance(240)
            caller = world.caller()
            instant: Any = caller.call("query_metrics", {"query": RATE})
            assert instant["ok"], instant
            rates = {s["labels"]["service_name"]: s["value"] for s in instant["result"]["series"]}
            assert rates["frontend"] > 0
            assert instant["result"]["at_s"] == world.t
            ranged: Any = caller.call(
                "query_metrics", {"query": RATE, "start_s": 120, "end_s": 240, "step_s": 30}
            )
            assert ranged["ok"], ranged
            frontend = next(
                s for s in ranged["result"]["series"] if s["labels"]["service_name"] == "frontend"
            )
            assert [t for t, _ in frontend["points"]] == [120.0, 150.0, 180.0, 210.0, 240.0]
            assert all(v is not None and v > 0 for _, v in frontend["points"])
            wrong: Any = caller.call("query_metrics", {"query": "sum(("})
            assert wrong["error"]["type"] == "QueryRejected"  # Prometheus refused the PromQL
        querier.close()
