"""Measurements of an entry whose symptom shows as it should, for the admission record and verdict tests."""

from __future__ import annotations

from orchestrator.catalog.admissions import Measurements


def measured(**changes: object) -> Measurements:
    healthy_symptom: dict[str, object] = {
        "entry_rate_before": 16.3,
        "entry_rate_after": 16.4,
        "entry_failed_fraction_after": 0.3,
        "server_errors_per_min_before": 0.0,
        "server_errors_per_min": 12.0,
        "error_logs_per_min_before": 0.0,
        "error_logs_per_min_after": 3.0,
        "restarts": 0,
        "message_before": False,
        "message_after": True,
        "message_source": "log",
        "deployed_value_ok": True,
        "became_ready": True,
        "restored": True,
        "ready_after_revert": True,
        "serving_after_revert": True,
        "message_after_revert": False,
    }
    healthy_symptom.update(changes)
    return Measurements.model_validate(healthy_symptom)
