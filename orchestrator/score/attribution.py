"""The scored faults and the attribution of alerts to them (docs/metrics.md, "Inputs" and "Attribution")."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import AlertRecord, IncidentReport

SERVICE_LABELS = ("service", "service_name")
WORKLOAD_LABELS = ("workload", "deployment", "statefulset")
POD_LABEL = "pod"
NAMESPACE_LABEL = "namespace"
# A Deployment's pod is <name>-<pod-template-hash>-<suffix>; a StatefulSet's is <name>-<ordinal>.
_DEPLOYMENT_POD = re.compile(r"^(?P<workload>.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$")
_STATEFUL_POD = re.compile(r"^(?P<workload>.+)-\d+$")
_SUCCESSFUL_REVERTS = ("reverted", "already_restored")


@dataclass(frozen=True)
class Fault:
    """One scored fault: ground truth plus its resolved window. ``rank`` is its place in injection order."""

    fault_id: str
    catalog_id: str
    category: str
    mechanism: str
    namespace: str
    culprits: frozenset[str]
    artifact: str
    scope: frozenset[str]
    inject_s: float
    revert_s: float
    window_end_s: float
    rank: int


def normalise_name(name: str) -> str:
    return name.strip().lower()


def run_end(bundle: Bundle) -> float:
    """The run's end: its ``run_ended`` record, else the latest time any record mentions (no side effects)."""
    if bundle.ended is not None:
        return bundle.ended.t
    times: list[float] = [0.0]
    times += [f.inject_s for f in bundle.injected] + [r.t for r in bundle.reverted]
    times += [a.ends_at if a.ends_at is not None else a.starts_at for a in bundle.alerts]
    for group in (
        bundle.probes,
        bundle.artifacts,
        bundle.service,
        bundle.incident_reports,
        bundle.interventions,
    ):
        times += [record.t for record in group]
    return max(times)


def scored_faults(bundle: Bundle) -> tuple[Fault, ...]:
    """Injected faults whose injection did not fail, in injection order (ties by id) (no side effects)."""
    failed = {record.fault_id for record in bundle.failed}
    reverts: dict[str, float] = {}
    for revert in bundle.reverted:
        if revert.outcome in _SUCCESSFUL_REVERTS:
            reverts.setdefault(revert.fault_id, revert.t)
    end = run_end(bundle)
    grace = bundle.manifest.grace_s
    injected = sorted(
        (record for record in bundle.injected if record.fault_id not in failed),
        key=lambda record: (record.inject_s, record.fault_id),
    )
    faults = []
    for rank, record in enumerate(injected):
        revert_s = reverts.get(record.fault_id, end)
        faults.append(
            Fault(
                fault_id=record.fault_id,
                catalog_id=record.catalog_id,
                category=record.category,
                mechanism=record.mechanism,
                namespace=record.namespace,
                culprits=frozenset(normalise_name(s) for s in record.culprits),
                artifact=record.artifact,
                scope=frozenset(normalise_name(s) for s in record.scope),
                inject_s=record.inject_s,
                revert_s=revert_s,
                window_end_s=revert_s + grace,
                rank=rank,
            )
        )
    return tuple(faults)


def latest_alerts(alerts: Iterable[AlertRecord]) -> dict[str, AlertRecord]:
    """The latest record of every alert id: the truth about that alert (no side effects)."""
    latest: dict[str, AlertRecord] = {}
    for alert in alerts:
        latest[alert.alert_id] = alert
    return latest


def latest_reports(reports: Iterable[IncidentReport]) -> dict[str, IncidentReport]:
    """Each incident as last reported: the latest report by time, journal order breaking ties."""
    latest: dict[str, IncidentReport] = {}
    for report in sorted(reports, key=lambda report: report.t):
        latest[report.incident_id] = report
    return latest


def _workload_matches(workload: str, scope: frozenset[str]) -> bool:
    # Helm-installed apps prefix workloads with the release name (``<release>-<service>``).
    return workload in scope or any(workload.endswith(f"-{service}") for service in scope)


def names_service_in(labels: Mapping[str, str], scope: frozenset[str]) -> bool:
    """Whether the service an alert names (or its workload or pod belongs to) is in ``scope``."""
    for key in SERVICE_LABELS:
        if labels.get(key):
            return normalise_name(labels[key]) in scope
    for key in WORKLOAD_LABELS:
        if labels.get(key):
            return _workload_matches(normalise_name(labels[key]), scope)
    pod = normalise_name(labels.get(POD_LABEL, ""))
    if not pod:
        return False
    candidates = [pod]
    for pattern in (_DEPLOYMENT_POD, _STATEFUL_POD):
        match = pattern.match(pod)
        if match:
            candidates.append(match.group("workload"))
    return any(_workload_matches(candidate, scope) for candidate in candidates)


def is_attributable(alert: AlertRecord, fault: Fault) -> bool:
    """docs/metrics.md's three conditions: started in the active window, same namespace, names a scope
    service."""
    if not fault.inject_s <= alert.starts_at <= fault.window_end_s:
        return False
    if alert.labels.get(NAMESPACE_LABEL) != fault.namespace:
        return False
    return names_service_in(alert.labels, fault.scope)


def attribute(alerts: Mapping[str, AlertRecord], faults: Iterable[Fault]) -> dict[str, frozenset[str]]:
    """Alert id -> ids of the faults it is attributable to; alerts attributable to none are left out."""
    found: dict[str, set[str]] = {}
    by_start = sorted(alerts.values(), key=lambda alert: (alert.starts_at, alert.alert_id))
    starts = [alert.starts_at for alert in by_start]
    for fault in faults:
        low, high = bisect_left(starts, fault.inject_s), bisect_right(starts, fault.window_end_s)
        for alert in by_start[low:high]:
            if is_attributable(alert, fault):
                found.setdefault(alert.alert_id, set()).add(fault.fault_id)
    return {alert_id: frozenset(ids) for alert_id, ids in found.items()}
