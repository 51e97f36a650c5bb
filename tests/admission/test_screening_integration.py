"""Admission on fresh twins: a real fault is admitted for its symptom; an entry that changes a setting no one
reads produces no symptom and is rejected, with the reasons named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.admission.judging import NO_ALERT
from orchestrator.admission.screening import Job, Settings, admit, jobs_for
from orchestrator.catalog.faults import FAULT_ENTRY, Entry
from orchestrator.catalog.loading import load_catalog

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]
OB = "online-boutique"


def _quiet_entry() -> Entry:
    """A fixture: an environment variable the frontend never reads; nothing breaks, nothing is printed."""
    entry: Entry = FAULT_ENTRY.validate_python(
        {
            "id": "ob-frontend-unread-setting",
            "app": OB,
            "category": "configuration-bug",
            "mechanism": "config",
            "target": "frontend",
            "culprits": ["frontend"],
            "artifact": "config:frontend/env/UNREAD_SETTING",
            "description": "sets a variable the frontend does not read",
            "intended_update": "prepare a setting for a later release",
            "defect": "none: the setting is unused",
            "log": {"service": "frontend", "message": "unread setting rejected"},
            "probe": {
                "query": 'sum(rate(traces_span_metrics_calls_total{namespace="$namespace"}[1m]))',
                "healthy": {"op": ">", "value": 0},
            },
            "remedy": {"action": "none"},
            "inject": {"field": "env/UNREAD_SETTING", "value": "on"},
        }
    )
    return entry


def test_a_real_fault_is_admitted_and_a_fault_without_symptom_is_rejected_with_reasons(
    tmp_path: Path,
) -> None:
    settings = Settings(seed=3)
    catalog = load_catalog(OB)
    (real,) = jobs_for(catalog, ids=["ob-cart-redis-port"], root=None, workdir=tmp_path, settings=settings)
    quiet = Job(
        entry=_quiet_entry(),
        app=OB,
        namespace=OB,
        entry_point="frontend",
        scope=frozenset({"frontend"}),
        direct=True,
        workdir=tmp_path / "quiet",
        settings=settings,
    )
    records, failures = admit([real, quiet], workers=2)
    assert failures == {}
    by_id = {record.id: record for record in records}

    admitted = by_id["ob-cart-redis-port"]
    assert admitted.admitted, admitted.reasons
    assert admitted.content_hash == catalog.by_id["ob-cart-redis-port"].content_hash()
    measured = admitted.measurements
    assert measured is not None
    assert measured.message_after and not measured.message_before and not measured.message_after_revert
    assert measured.deployed_value_ok and measured.restored and measured.ready_after_revert
    assert measured.server_errors_per_min >= 4
    assert "OnlineBoutiqueCartErrors" in admitted.rules_fired

    rejected = by_id["ob-frontend-unread-setting"]
    assert not rejected.admitted
    assert rejected.reasons[0] == "log message 'unread setting rejected' in frontend absent after injection"
    assert rejected.reasons[1].startswith("no screening criterion: server errors 0.0/min")
    assert rejected.measurements is not None and rejected.measurements.restored
    assert rejected.rules_fired == ()
    assert NO_ALERT in rejected.reasons
