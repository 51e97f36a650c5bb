"""Per-fault stages: detected (in a matched incident), located (correct diagnosis), repaired (verified).

All functions here are pure: they take records and faults and return times or flags, no side effects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.bundle.records import ArtifactSample, IncidentReport, Intervention, ProbeSample
from orchestrator.score.attribution import Attribution, Fault, normalise_name

_WHITESPACE = re.compile(r"\s+")


def artifact_kind(artifact: str) -> str:
    return normalise_name(artifact.split(":", 1)[0])


def normalise_artifact(artifact: str) -> str:
    """``KIND:REFERENCE`` without case or whitespace differences, and without an image registry prefix."""
    flat = _WHITESPACE.sub("", artifact).lower()
    kind, separator, reference = flat.partition(":")
    if kind == "release":
        reference = reference.rsplit("/", 1)[-1]
    return f"{kind}{separator}{reference}"


def diagnoses_fault(report: IncidentReport, fault: Fault, *, strict: bool) -> bool:
    """Exactly the culprit set and the artifact's kind (``strict``: the full normalised artifact)."""
    if frozenset(normalise_name(s) for s in report.culprits) != fault.culprits:
        return False
    if strict:
        return normalise_artifact(report.artifact) == normalise_artifact(fault.artifact)
    return artifact_kind(report.artifact) == artifact_kind(fault.artifact)


def first_diagnosis(reports: Sequence[IncidentReport], fault: Fault, *, strict: bool) -> float | None:
    """Time of the first report (at or after injection) of an incident that diagnoses ``fault``."""
    for report in reports:
        if report.t >= fault.inject_s and diagnoses_fault(report, fault, strict=strict):
            return report.t
    return None


def first_detection(
    reports: Sequence[IncidentReport], fault: Fault, attribution: Attribution
) -> float | None:
    """Time of the first report of an incident that contains an alert attributable to ``fault`` (and, for an
    alert that was already firing, made once it became evidence)."""
    for report in reports:
        if fault.fault_id in attribution.counted_in(report):
            return report.t
    return None


def targets_scope(intervention: Intervention, fault: Fault) -> bool:
    return any(normalise_name(target) in fault.scope for target in intervention.targets)


def acted_on(interventions: Iterable[Intervention], fault: Fault) -> bool:
    """Whether an executed intervention inside the fault's live window targeted its scope."""
    return any(fault.inject_s <= i.t < fault.revert_s and targets_scope(i, fault) for i in interventions)


@dataclass(frozen=True)
class Evidence:
    t: float
    good: bool


def _confirmed_after(evidence: Sequence[Evidence], acted_at: float) -> float | None:
    # The last stretch of good observations must reach the revert and begin after the intervention:
    # a recovery that relapses, or that happened before anyone acted, confirms nothing.
    if not evidence or not evidence[-1].good:
        return None
    start = len(evidence) - 1
    while start > 0 and evidence[start - 1].good:
        start -= 1
    first_good = evidence[start].t
    return first_good if acted_at < first_good else None


def repair_confirmed_at(
    fault: Fault,
    *,
    interventions: Iterable[Intervention],
    probes: Iterable[ProbeSample],
    artifacts: Iterable[ArtifactSample],
) -> float | None:
    """Time of the observation confirming a verified repair of ``fault``, or None
    (docs/metrics.md, "Repaired (Rep)").

    Only successful interventions completed inside [inject, revert) that target the fault's scope count;
    only observations inside [inject, revert) count, since the revert itself restores everything.
    """
    acting = [
        i.t
        for i in interventions
        if i.result == "ok" and fault.inject_s <= i.t < fault.revert_s and targets_scope(i, fault)
    ]
    if not acting:
        return None

    def live(t: float) -> bool:
        return fault.inject_s <= t < fault.revert_s

    probe = sorted(
        (Evidence(s.t, s.healthy) for s in probes if s.fault_id == fault.fault_id and live(s.t)),
        key=lambda e: e.t,
    )
    if not any(not e.good for e in probe):
        probe = sorted(
            (Evidence(s.t, s.restored) for s in artifacts if s.fault_id == fault.fault_id and live(s.t)),
            key=lambda e: e.t,
        )
    return _confirmed_after(probe, min(acting))


OUTCOMES = (
    "missed",
    "correlated_only",
    "located_without_repair",
    "acted_on_without_repair",
    "handled_end_to_end",
)


def outcome(*, a: int, b: int, c: int, acted: bool) -> str:
    """The one plot outcome of a fault, furthest stage first (no side effects)."""
    if not a:
        return "missed"
    if b and c:
        return "handled_end_to_end"
    if acted:
        return "acted_on_without_repair"
    if b:
        return "located_without_repair"
    return "correlated_only"
