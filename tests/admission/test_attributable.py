"""Which alerts of an admission twin are an entry's: as the scorer attributes them, in its active window."""

from __future__ import annotations

from pathlib import Path

from orchestrator.admission.screening import Settings, attributable_rules, jobs_for
from orchestrator.catalog.loading import load_catalog
from orchestrator.telemetry.alerts import EvaluatedAlert

INJECTED, END = 1_000.0, 1_420.0


def _alert(rule: str, *, starts_at: float, state: str = "firing", **labels: str) -> EvaluatedAlert:
    return EvaluatedAlert.model_validate(
        {
            "id": f"{rule}-{starts_at}",
            "rule": rule,
            "state": state,
            "labels": {"alertname": rule, "namespace": "online-boutique", **labels},
            "annotations": {},
            "active_at": starts_at - 60.0,
            "starts_at": starts_at,
            "ends_at": None,
            "value": 1.0,
        }
    )


def test_an_alert_is_the_entrys_when_it_starts_in_its_window_on_a_service_of_its_scope(
    tmp_path: Path,
) -> None:
    catalog = load_catalog("online-boutique")
    (job,) = jobs_for(catalog, ids=["ob-cart-redis-port"], root=None, workdir=tmp_path, settings=Settings())
    assert {"cartservice", "frontend"} <= job.scope and "adservice" not in job.scope
    alerts = [
        _alert("OnlineBoutiqueCartErrors", starts_at=1_100.0, service="cartservice"),
        _alert("KubePodReplaced", starts_at=1_400.0, pod="frontend-5d8f7c9b6d-x2k9p"),  # by the grace's end
        _alert("ServiceTrafficStopped", starts_at=1_100.0, service="adservice"),  # outside the scope
        _alert("ServiceHighErrorRatio", starts_at=900.0, service="cartservice"),  # already firing before
        _alert("ServiceLatencyP99High", starts_at=1_500.0, service="cartservice"),  # after the grace
        _alert("RedisDown", starts_at=1_100.0, service="cartservice", namespace="elsewhere"),
        _alert("KubeNodeNotReady", starts_at=1_100.0, node="worker-1", namespace=""),  # names no service
        _alert("ServiceErrorRatioCritical", starts_at=1_100.0, state="resolved", service="cartservice"),
    ]
    assert attributable_rules(alerts, job, injected_at=INJECTED, window_end=END) == (
        "KubePodReplaced",
        "OnlineBoutiqueCartErrors",
    )
