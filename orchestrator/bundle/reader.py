"""Loading a run bundle (sealed, or an unsealed journal for recovery) into typed records for the scorer.

Reading stops at each stream's last complete line: an unterminated tail left by a crash is ignored.
Integrity is not checked here; that is ``verify_bundle``'s job.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.bundle.journal import PREV_KEY, STREAM_SUFFIX
from orchestrator.bundle.records import (
    RECORD_ADAPTER,
    STREAMS,
    AlertRecord,
    ArtifactSample,
    DecoyApplied,
    FaultFailed,
    FaultInjected,
    FaultReverted,
    ForbiddenAttempt,
    IncidentReport,
    Intervention,
    Invocation,
    ModelCall,
    ProbeSample,
    Record,
    RuleFailed,
    RuleHealth,
    RunEnded,
    RunManifest,
    ScheduleRecord,
    ServiceSample,
    ServiceStates,
    StateDrift,
    ToolCall,
)
from orchestrator.bundle.seal import is_sealed
from orchestrator.errors import BundleError


@dataclass(frozen=True)
class Bundle:
    """Every record of one run, grouped by kind, each group in journal order."""

    path: Path
    sealed: bool
    manifest: RunManifest
    schedule: tuple[ScheduleRecord, ...] = ()
    ended: RunEnded | None = None
    injected: tuple[FaultInjected, ...] = ()
    reverted: tuple[FaultReverted, ...] = ()
    failed: tuple[FaultFailed, ...] = ()
    alerts: tuple[AlertRecord, ...] = ()
    rule_failures: tuple[RuleFailed, ...] = ()
    rule_health: tuple[RuleHealth, ...] = ()  # one per rule, written when the run ended
    probes: tuple[ProbeSample, ...] = ()
    artifacts: tuple[ArtifactSample, ...] = ()
    service: tuple[ServiceSample, ...] = ()
    invocations: tuple[Invocation, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    incident_reports: tuple[IncidentReport, ...] = ()
    interventions: tuple[Intervention, ...] = ()
    forbidden: tuple[ForbiddenAttempt, ...] = ()
    model_calls: tuple[ModelCall, ...] = ()
    service_states: tuple[ServiceStates, ...] = ()  # the workloads at the run's start and end
    state_drifts: tuple[StateDrift, ...] = ()  # reverted fields found changed again, and what was done
    decoys: tuple[DecoyApplied, ...] = ()  # the schedule's harmless changes, as applied


def payload_dir(bundle: Path) -> Path:
    """Where the streams of ``bundle`` live: ``data/`` of a sealed bag, else the journal directory itself."""
    bundle = Path(bundle)
    return bundle / "data" if is_sealed(bundle) else bundle


def read_records(bundle: Path) -> list[Record]:
    """All complete records of ``bundle``, stream by stream in a fixed order, each stream in journal order."""
    directory = payload_dir(bundle)
    if not (directory / f"run{STREAM_SUFFIX}").is_file():
        raise BundleError(f"{bundle}: not a run bundle (no run{STREAM_SUFFIX} in {directory})")
    records: list[Record] = []
    for stream in STREAMS:
        path = directory / f"{stream}{STREAM_SUFFIX}"
        if path.is_file():
            records += _read_stream(path)
    return records


def _read_stream(path: Path) -> list[Record]:
    *complete, _tail = path.read_bytes().split(b"\n")
    records: list[Record] = []
    for number, line in enumerate(complete, start=1):
        try:
            body = json.loads(line)
            body.pop(PREV_KEY, None)
            records.append(RECORD_ADAPTER.validate_python(body))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            raise BundleError(f"{path}:{number}: {field} = {error.get('input')!r}: {error['msg']}") from exc
        except (ValueError, AttributeError) as exc:
            raise BundleError(f"{path}:{number}: not a JSON record: {exc}") from exc
    return records


# Which ``Bundle`` field holds each record type (the manifest and the run end are singled out).
_FIELD_OF_TYPE: dict[type[Record], str] = {
    ScheduleRecord: "schedule",
    FaultInjected: "injected",
    FaultReverted: "reverted",
    FaultFailed: "failed",
    AlertRecord: "alerts",
    RuleFailed: "rule_failures",
    RuleHealth: "rule_health",
    ProbeSample: "probes",
    ArtifactSample: "artifacts",
    ServiceSample: "service",
    Invocation: "invocations",
    ToolCall: "tool_calls",
    IncidentReport: "incident_reports",
    Intervention: "interventions",
    ForbiddenAttempt: "forbidden",
    ModelCall: "model_calls",
    ServiceStates: "service_states",
    StateDrift: "state_drifts",
    DecoyApplied: "decoys",
}


def bundle_from_records(records: Iterable[Record], *, path: Path, sealed: bool = False) -> Bundle:
    """Group records into a ``Bundle`` (no side effects); exactly one run manifest is required."""
    groups: dict[str, list[Any]] = {name: [] for name in _FIELD_OF_TYPE.values()}
    manifests: list[RunManifest] = []
    ended: list[RunEnded] = []
    for record in records:
        if isinstance(record, RunManifest):
            manifests.append(record)
        elif isinstance(record, RunEnded):
            ended.append(record)
        else:
            groups[_FIELD_OF_TYPE[type(record)]].append(record)
    if len(manifests) != 1:
        raise BundleError(f"{path}: expected exactly one run_manifest record, found {len(manifests)}")
    return Bundle(
        path=path,
        sealed=sealed,
        manifest=manifests[0],
        ended=ended[-1] if ended else None,
        **{name: tuple(values) for name, values in groups.items()},
    )


def read_bundle(bundle: Path) -> Bundle:
    """Load ``bundle`` (sealed or not) into a ``Bundle``."""
    bundle = Path(bundle)
    return bundle_from_records(read_records(bundle), path=bundle, sealed=is_sealed(bundle))
