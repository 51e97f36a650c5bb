"""Short constructors for hand-built scoring scenarios (namespace ``boutique``, grace 60 s)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.records import (
    AlertRecord,
    ArtifactSample,
    FaultInjected,
    FaultReverted,
    ForbiddenAttempt,
    IncidentReport,
    Intervention,
    ProbeSample,
    Record,
    RunEnded,
    ServiceStates,
    WorkloadState,
)
from orchestrator.score.scorecard import Scorecard, score_bundle

NS = "boutique"
CART_SCOPE = ("cartservice", "checkoutservice", "frontend")


def fault(
    fault_id: str,
    *,
    inject: float,
    revert: float | None,
    culprits: Sequence[str] = ("cartservice",),
    scope: Sequence[str] = CART_SCOPE,
    artifact: str = "config:cartservice/env/REDIS_ADDR",
    category: str = "configuration",
) -> list[Record]:
    records: list[Record] = [
        FaultInjected(
            fault_id=fault_id,
            catalog_id=f"cat-{fault_id}",
            category=category,
            mechanism="config",
            namespace=NS,
            target=culprits[0],
            culprits=list(culprits),
            artifact=artifact,
            scope=list(scope),
            inject_s=inject,
            planned_revert_s=revert if revert is not None else inject + 600,
            pre_value="before",
            injected_value="after",
        )
    ]
    if revert is not None:
        records.append(FaultReverted(fault_id=fault_id, t=revert, outcome="reverted"))
    return records


def alert(
    alert_id: str,
    *,
    start: float,
    service: str = "frontend",
    namespace: str = NS,
    rule: str = "HighErrorRate",
    end: float | None = None,
    severity: str | None = None,
    signal: str | None = None,
) -> AlertRecord:
    labels = {"namespace": namespace, "service": service}
    labels.update({key: value for key, value in (("severity", severity), ("signal", signal)) if value})
    return AlertRecord(alert_id=alert_id, rule=rule, labels=labels, starts_at=start, ends_at=end)


def workload(name: str, *, image: str = "v1", config: str = "a", replicas: int = 1) -> WorkloadState:
    """A Deployment's state; ``config`` stands for its settings (hashed as the runner hashes them)."""
    return WorkloadState(
        kind="Deployment",
        name=name,
        images={"server": f"{name}:{image}"},
        config_sha256=hashlib.sha256(config.encode()).hexdigest(),
        replicas=replicas,
    )


def states(moment: Literal["start", "end"], t: float, *workloads: WorkloadState) -> ServiceStates:
    return ServiceStates(moment=moment, t=t, workloads=list(workloads))


def report(
    t: float, incident: str, alerts: Iterable[str], *, culprits: Iterable[str] = (), artifact: str = ""
) -> IncidentReport:
    return IncidentReport(
        t=t, incident_id=incident, alert_ids=list(alerts), culprits=list(culprits), artifact=artifact
    )


def act(
    t: float,
    *targets: str,
    incident: str | None = "INC-1",
    result: Literal["ok", "error"] = "ok",
    tool: str = "rollback",
) -> Intervention:
    return Intervention(t=t, tool=tool, targets=list(targets), incident_id=incident, result=result)


def probes(fault_id: str, states: Iterable[tuple[float, bool]]) -> list[Record]:
    return [ProbeSample(fault_id=fault_id, t=t, value=None, healthy=ok) for t, ok in states]


def restored(fault_id: str, states: Iterable[tuple[float, bool]]) -> list[Record]:
    return [ArtifactSample(fault_id=fault_id, t=t, restored=ok) for t, ok in states]


def forbidden(t: float) -> ForbiddenAttempt:
    return ForbiddenAttempt(
        t=t, tool="delete_namespace", args={"name": NS}, reason="namespace deletion", blocked=True
    )


def build(tmp_path: Path, records: Iterable[Record], *, name: str = "bundle", end: float = 1800.0) -> Bundle:
    """Seal the records (with a manifest and a run end) into a bundle on disk and read it back."""
    all_records: list[Record] = [sample_manifest(), *records, RunEnded(t=end)]
    return read_bundle(write_bundle(tmp_path / name, all_records))


def score(tmp_path: Path, records: Iterable[Record], *, baseline: Bundle | None = None) -> Scorecard:
    return score_bundle(build(tmp_path, records), baseline)
