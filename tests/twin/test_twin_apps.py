"""Train Ticket and Astronomy Shop boot from their topology files, run every pod and serve traffic."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client, config

from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import served

pytestmark = pytest.mark.slow


def _entry_counts(twin: RunningTwin, entry: str) -> tuple[float, float]:
    ok = errors = 0.0
    for (service, _span, kind, status), count, _ms, _b in twin.twin.model.spans.export():
        if service == entry and kind == "SPAN_KIND_SERVER":
            if status == "STATUS_CODE_ERROR":
                errors += count
            else:
                ok += count
    return ok, errors


@pytest.mark.parametrize(
    ("app", "entry"), [("train-ticket", "ts-ui-dashboard"), ("astronomy-shop", "frontend-proxy")]
)
def test_the_app_boots_runs_every_pod_and_serves_its_entry_point(
    app: str, entry: str, tmp_path: Path
) -> None:
    twin = served(tmp_path, app=app)
    try:
        twin.advance(180)  # the slowest services (JVMs) are ready well within three minutes
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(twin.kubeconfig)))
        pods = core.list_namespaced_pod(twin.twin.namespace).items
        assert len(pods) >= len(twin.twin.topology.services) - 1
        assert {p.status.phase for p in pods} == {"Running"}
        ok_before, errors_before = _entry_counts(twin, entry)
        twin.advance(120)
        ok, errors = _entry_counts(twin, entry)
        assert ok - ok_before > 0.5 * twin.twin.topology.requests_per_second * 120
        assert errors - errors_before < 0.01 * (ok - ok_before)
    finally:
        twin.stop()
