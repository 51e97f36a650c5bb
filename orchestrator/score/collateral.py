"""Collateral and resolved (docs/metrics.md, "Collateral" and "Resolved"): what the agent changed outside
every fault's scope by the run's end, and which faults were resolved without such a change. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import Intervention, ServiceStates, WorkloadState
from orchestrator.score.attribution import Fault, normalise_name, workload_matches

ABSENT = "absent"
PRESENT = "present"


@dataclass(frozen=True)
class Difference:
    """One field of one workload outside every scope that differs between the run's start and its end, and
    the incidents referenced by the interventions that touched the workload."""

    workload: str  # "Deployment/emailservice"
    field: str  # exists, images, config or replicas
    start: str
    end: str
    incidents: tuple[str, ...]


def snapshots(bundle: Bundle) -> tuple[ServiceStates, ServiceStates] | None:
    """The first start and the last end snapshot, or None when the bundle lacks either (no side effects)."""
    starts = [s for s in bundle.service_states if s.moment == "start"]
    ends = [s for s in bundle.service_states if s.moment == "end"]
    if not starts or not ends:
        return None
    return starts[0], ends[-1]


def _images(state: WorkloadState) -> str:
    return ", ".join(f"{name}={image}" for name, image in sorted(state.images.items()))


def _fields(before: WorkloadState | None, after: WorkloadState | None) -> list[tuple[str, str, str]]:
    if before is None or after is None:
        return [("exists", PRESENT if before else ABSENT, PRESENT if after else ABSENT)]
    found = []
    if before.images != after.images:
        found.append(("images", _images(before), _images(after)))
    if before.config_sha256 != after.config_sha256:
        found.append(("config", before.config_sha256[:12], after.config_sha256[:12]))
    if before.replicas != after.replicas:
        found.append(("replicas", str(before.replicas), str(after.replicas)))
    return found


def touched_by(name: str, interventions: Iterable[Intervention]) -> list[Intervention]:
    """The interventions one of whose targets is the service the workload ``name`` runs."""
    workload = normalise_name(name)
    return [
        i
        for i in interventions
        if any(workload_matches(workload, frozenset({normalise_name(t)})) for t in i.targets)
    ]


def collateral(bundle: Bundle, faults: Sequence[Fault]) -> tuple[Difference, ...] | None:
    """Every start-to-end difference of a workload outside every fault's scope that an intervention touched,
    in workload order; None when the bundle has no snapshots to compare (no side effects). The schedule's
    decoys are expected: a decoyed workload is compared with its state after its last decoy."""
    pair = snapshots(bundle)
    if pair is None:
        return None
    start, end = ({(w.kind, w.name): w for w in s.workloads} for s in pair)
    for decoy in bundle.decoys:
        start[(decoy.workload.kind, decoy.workload.name)] = decoy.workload
    found: list[Difference] = []
    for key in sorted(start.keys() | end.keys()):
        kind, name = key
        if any(workload_matches(normalise_name(name), fault.scope) for fault in faults):
            continue
        changes = _fields(start.get(key), end.get(key))
        touching = touched_by(name, bundle.interventions)
        if not changes or not touching:
            continue
        incidents = tuple(sorted({i.incident_id for i in touching if i.incident_id is not None}))
        found += [Difference(f"{kind}/{name}", field, a, b, incidents) for field, a, b in changes]
    return tuple(found)


def is_resolved(
    *, b: int, c: int, incident_id: str | None, differences: Sequence[Difference] | None
) -> int | None:
    """1 when located, repaired and no collateral difference is charged to the fault's incident; None when
    that depends on a collateral check the bundle cannot make (no side effects)."""
    if not (b and c):
        return 0
    if differences is None:
        return None
    return int(not any(incident_id in d.incidents for d in differences))
