"""The control plane's /metrics counts ended runs by status and by where they came from."""

from __future__ import annotations

from orchestrator.api.metrics import Metrics


def test_ended_runs_are_counted_by_status_and_source_with_nightly_runs_under_one_label() -> None:
    metrics = Metrics()
    metrics.ended(status="finished", source="nightly 2026-12-01T02:00:00Z")
    metrics.ended(status="finished", source="nightly 2026-12-02T02:00:00Z")
    metrics.ended(status="failed", source="api")
    text = metrics.exposition().decode()
    assert 'marathon_runs_ended_total{source="nightly",status="finished"} 2.0' in text
    assert 'marathon_runs_ended_total{source="api",status="failed"} 1.0' in text
