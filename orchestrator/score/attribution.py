"""The scored faults and the attribution of alerts to them (docs/metrics.md, "Inputs" and "Attribution")."""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import AlertRecord, IncidentReport

SERVICE_LABELS = ("service", "service_name")
WORKLOAD_LABELS = ("workload", "deployment", "statefulset")
POD_LABEL = "pod"
NAMESPACE_LABEL = "namespace"
SEVERITY_LABEL = "severity"
SIGNAL_LABEL = "signal"
SEVERITY_RANKS = {"info": 0, "warning": 1, "critical": 2}
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


def workload_matches(workload: str, scope: frozenset[str]) -> bool:
    """Whether a workload (normalised name) runs one of the services of ``scope``."""
    # Helm-installed apps prefix workloads with the release name (``<release>-<service>``).
    return workload in scope or any(workload.endswith(f"-{service}") for service in scope)


def names_service_in(labels: Mapping[str, str], scope: frozenset[str]) -> bool:
    """Whether the service an alert names (or its workload or pod belongs to) is in ``scope``."""
    for key in SERVICE_LABELS:
        if labels.get(key):
            return normalise_name(labels[key]) in scope
    for key in WORKLOAD_LABELS:
        if labels.get(key):
            return workload_matches(normalise_name(labels[key]), scope)
    pod = normalise_name(labels.get(POD_LABEL, ""))
    if not pod:
        return False
    candidates = [pod]
    for pattern in (_DEPLOYMENT_POD, _STATEFUL_POD):
        match = pattern.match(pod)
        if match:
            candidates.append(match.group("workload"))
    return any(workload_matches(candidate, scope) for candidate in candidates)


def services_named(labels: Mapping[str, str], scope: frozenset[str]) -> frozenset[str]:
    """The services of ``scope`` an alert names (no side effects)."""
    return frozenset(service for service in scope if names_service_in(labels, frozenset({service})))


def is_attributable(alert: AlertRecord, fault: Fault) -> bool:
    """docs/metrics.md's three conditions: started in the active window, same namespace, names a scope
    service."""
    if not fault.inject_s <= alert.starts_at <= fault.window_end_s:
        return False
    return in_namespace_and_scope(alert, fault)


def in_namespace_and_scope(alert: AlertRecord, fault: Fault) -> bool:
    """Conditions 2 and 3 of attribution: the fault's namespace, a service of its scope."""
    if alert.labels.get(NAMESPACE_LABEL) != fault.namespace:
        return False
    return names_service_in(alert.labels, fault.scope)


def firing_at_injection(alert: AlertRecord, fault: Fault) -> bool:
    """Whether the alert started before ``fault``'s injection and had not resolved by then."""
    return alert.starts_at < fault.inject_s and (alert.ends_at is None or alert.ends_at > fault.inject_s)


def severity_rank(alert: AlertRecord) -> int | None:
    """The rank of the alert's ``severity`` label (info < warning < critical), None for any other value."""
    return SEVERITY_RANKS.get(normalise_name(alert.labels.get(SEVERITY_LABEL, "")))


def raises(firing: AlertRecord, later: AlertRecord, named: Callable[[AlertRecord], frozenset[str]]) -> bool:
    """Whether ``later`` is a new series of ``firing``'s rule, or the same signal at a higher severity for a
    service of the fault's scope that ``firing`` names too (no side effects; docs/metrics.md,
    "Attribution"). ``named`` gives the services of that scope an alert names (``_ScopeNames``)."""
    if later.alert_id == firing.alert_id:
        return False
    if later.rule == firing.rule:
        return later.labels != firing.labels
    signal = firing.labels.get(SIGNAL_LABEL)
    if not signal or later.labels.get(SIGNAL_LABEL) != signal:
        return False
    low, high = severity_rank(firing), severity_rank(later)
    if low is None or high is None or high <= low:
        return False
    return bool(named(firing) & named(later))


@dataclass(frozen=True)
class Attribution:
    """Which faults each alert is attributable to, and since when an already-firing alert is evidence.

    ``faults_of`` maps an alert id to the ids of the faults it is attributable to (alerts attributable to
    none are left out). ``since`` holds, for each (alert id, fault id) attributed through the rule for
    already-firing alerts, the start of the first alert that raised it: a report made before that time
    does not count it for that fault."""

    faults_of: Mapping[str, frozenset[str]]
    since: Mapping[tuple[str, str], float]

    def of(self, alert_id: str) -> frozenset[str]:
        return self.faults_of.get(alert_id, frozenset())

    def counted_in(self, report: IncidentReport) -> frozenset[str]:
        """The faults ``report`` lists evidence of, at the time it was made (no side effects)."""
        found: set[str] = set()
        for alert_id in report.alert_ids:
            for fault_id in self.of(alert_id):
                if report.t >= self.since.get((alert_id, fault_id), -math.inf):
                    found.add(fault_id)
        return frozenset(found)

    def alerts_of(self, fault_id: str) -> tuple[str, ...]:
        return tuple(sorted(alert_id for alert_id, ids in self.faults_of.items() if fault_id in ids))

    def ambiguity_share(self) -> float | None:
        """Of the attributable alerts, the fraction attributable to more than one fault; None without any."""
        if not self.faults_of:
            return None
        return sum(len(ids) > 1 for ids in self.faults_of.values()) / len(self.faults_of)


@dataclass
class _ScopeNames:
    """``services_named`` of each alert for one scope, worked out once per alert: a fault's already-firing
    alerts are each compared with every alert started in its window."""

    scope: frozenset[str]
    _known: dict[str, frozenset[str]] = field(default_factory=dict)

    def __call__(self, alert: AlertRecord) -> frozenset[str]:
        found = self._known.get(alert.alert_id)
        if found is None:
            found = self._known[alert.alert_id] = services_named(alert.labels, self.scope)
        return found


def attribute(alerts: Mapping[str, AlertRecord], faults: Iterable[Fault]) -> Attribution:
    """Every alert's attribution to ``faults`` (no side effects; docs/metrics.md, "Attribution")."""
    found: dict[str, set[str]] = {}
    since: dict[tuple[str, str], float] = {}
    by_start = sorted(alerts.values(), key=lambda alert: (alert.starts_at, alert.alert_id))
    starts = [alert.starts_at for alert in by_start]
    for fault in faults:
        low, high = bisect_left(starts, fault.inject_s), bisect_right(starts, fault.window_end_s)
        started = [alert for alert in by_start[low:high] if is_attributable(alert, fault)]
        named = _ScopeNames(fault.scope)
        for alert in started:
            found.setdefault(alert.alert_id, set()).add(fault.fault_id)
        for firing in by_start[:low]:
            if not (firing_at_injection(firing, fault) and in_namespace_and_scope(firing, fault)):
                continue
            raised = [
                later.starts_at
                for later in started
                if (firing.ends_at is None or later.starts_at < firing.ends_at)
                and raises(firing, later, named)
            ]
            if raised:
                found.setdefault(firing.alert_id, set()).add(fault.fault_id)
                since[firing.alert_id, fault.fault_id] = min(raised)
    return Attribution(
        faults_of={alert_id: frozenset(ids) for alert_id, ids in found.items()},
        since=since,
    )
