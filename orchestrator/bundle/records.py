"""Typed, versioned journal records: every fact a marathon writes into its run bundle.

Each record carries a ``kind`` discriminator and a schema version ``v``. Records are grouped into stream
families (one JSON Lines file each, see ``STREAM_OF_KIND``). Times are float seconds since the schedule
origin; wall-clock facts never appear here (they live in the bundle's one runtime file).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    field_validator,
    model_validator,
)

from orchestrator.vocabulary.artifacts import ARTIFACT_KINDS  # docs/metrics.md, "Responsible artifacts"

SCHEMA_VERSION = 1

Seconds = Annotated[float, Field(allow_inf_nan=False)]
# An agent option's value: a plain string, integer, finite number or boolean, kept as given.
OptionValue = StrictStr | StrictBool | StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def _sorted_unique(values: list[str]) -> list[str]:
    # Sets are stored sorted so that the same facts always serialise to the same bytes.
    return sorted(set(values))


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1  # SCHEMA_VERSION; a reader meeting another version refuses the record


class Price(BaseModel):
    """Dollars per million tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_usd_per_mtok: Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
    output_usd_per_mtok: Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class RunManifest(_Record):
    """What was run: the first record of the ``run`` stream. ``price_table`` may hold a ``*`` fallback.

    ``agent_options`` are the options every invocation was given; left out of the record when there are
    none, so a run without options writes the manifest it wrote before options existed."""

    kind: Literal["run_manifest"] = "run_manifest"
    run_id: str = Field(min_length=1)
    app: str
    namespace: str
    seed: int
    catalog_version: str
    catalog_sha256: str
    rule_pack_version: str
    rule_pack_sha256: str
    code_version: str
    code_sha256: str
    agent_name: str
    agent_command: list[str]
    agent_options: dict[str, OptionValue] = Field(default_factory=dict, exclude_if=lambda given: not given)
    delta_s: Annotated[float, Field(gt=0.0)]
    budget_s: Annotated[float, Field(gt=0.0)]
    grace_s: Annotated[float, Field(ge=0.0)]
    schedule_params: dict[str, JsonValue] = Field(default_factory=dict)
    price_table: dict[str, Price] = Field(default_factory=dict)
    # False when the agent ran without its sandbox (``--unsandboxed``): its score is then not trustworthy.
    # Left out of the record when true, so a sandboxed run writes the manifest it wrote before.
    sandboxed: bool = Field(default=True, exclude_if=lambda sandboxed: sandboxed)


class ScheduleRecord(_Record):
    """One planned activation of a catalog entry."""

    kind: Literal["schedule"] = "schedule"
    index: Annotated[int, Field(ge=0)]
    at_s: Seconds
    duration_s: Annotated[float, Field(gt=0.0)]
    catalog_id: str


class RunEnded(_Record):
    """The end of the run (after the observation period and final reverts): closes every open window."""

    kind: Literal["run_ended"] = "run_ended"
    t: Seconds
    reason: str = "completed"


class FaultInjected(_Record):
    """Ground truth of one injected fault. ``scope`` is the affected scope P_f computed from the topology."""

    kind: Literal["fault_injected"] = "fault_injected"
    fault_id: str = Field(min_length=1)
    catalog_id: str
    category: str
    mechanism: str
    namespace: str
    target: str
    culprits: list[str] = Field(min_length=1)
    artifact: str
    scope: list[str] = Field(min_length=1)
    inject_s: Seconds
    planned_revert_s: Seconds
    pre_value: str
    injected_value: str

    @field_validator("culprits", "scope")
    @classmethod
    def _canonical_sets(cls, values: list[str]) -> list[str]:
        return _sorted_unique(values)

    @field_validator("artifact")
    @classmethod
    def _artifact_kind_is_known(cls, value: str) -> str:
        kind = value.split(":", 1)[0]
        if kind not in ARTIFACT_KINDS:
            raise ValueError(f"artifact kind {kind!r} is not one of {sorted(ARTIFACT_KINDS)}")
        return value


class FaultReverted(_Record):
    kind: Literal["fault_reverted"] = "fault_reverted"
    fault_id: str
    t: Seconds
    outcome: Literal["reverted", "already_restored", "failed"]
    detail: str = ""


class FaultFailed(_Record):
    """The injection of ``fault_id`` failed: the fault is not part of the scored set."""

    kind: Literal["fault_failed"] = "fault_failed"
    fault_id: str
    t: Seconds
    error: str


class StateDrift(_Record):
    """A reverted fault's field found changed by someone else (see ``orchestrator/mechanisms/applying.py``):
    holding the fault's value again (an untracked fault, ``restored`` to the pre-fault value by the runner) or
    a third value (an agent's deliberate change, ``left`` as it is and reported)."""

    kind: Literal["state_drift"] = "state_drift"
    fault_id: str
    t: Seconds
    object: str
    field: str
    expected: str
    found: str
    action: Literal["restored", "left"]


class AlertRecord(_Record):
    """One state of an alert; a new record is appended on each change and the latest per id is the truth."""

    kind: Literal["alert"] = "alert"
    alert_id: str = Field(min_length=1)
    rule: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: Seconds
    ends_at: Seconds | None = None


class RuleFailed(_Record):
    """One evaluation window of a rule failed: its query, or turning its answer into alerts at ``t``.

    The rule is evaluated again over the longer window at the next boundary and the other rules go on, so a
    rule that never fired and a rule that could not be evaluated are told apart by these records."""

    kind: Literal["rule_failed"] = "rule_failed"
    rule: str = Field(min_length=1)
    group: str
    t: Seconds
    error: str


class RuleHealth(_Record):
    """How one rule of the pack fared over the whole run: its evaluation windows and how many failed.

    Written for every rule of the pack when the run ends, in the pack's order, failed or not."""

    kind: Literal["rule_health"] = "rule_health"
    rule: str = Field(min_length=1)
    group: str
    evaluations: Annotated[int, Field(ge=0)]
    failures: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def _no_more_failures_than_evaluations(self) -> RuleHealth:
        if self.failures > self.evaluations:
            raise ValueError(f"{self.failures} failures of {self.evaluations} evaluations")
        return self


class ProbeSample(_Record):
    kind: Literal["probe_sample"] = "probe_sample"
    fault_id: str
    t: Seconds
    value: float | None
    healthy: bool


class ArtifactSample(_Record):
    """Whether the fault's responsible artifact holds its pre-injection value at ``t``."""

    kind: Literal["artifact_sample"] = "artifact_sample"
    fault_id: str
    t: Seconds
    restored: bool


class ServiceSample(_Record):
    """Entry-point measurements: request rate, failed fraction, fraction slower than 2.5 s."""

    kind: Literal["service_sample"] = "service_sample"
    t: Seconds
    q: Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
    e: Fraction
    l: Fraction  # noqa: E741 - the metric's own name in docs/metrics.md


class WorkloadState(BaseModel):
    """One Deployment or StatefulSet as it stood: what it runs, how it is configured, how many replicas.

    ``config_sha256`` is the SHA-256 of the canonical JSON of its containers' settings (see
    ``orchestrator/run/states.py``): two states have the same hash exactly when no such setting changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["Deployment", "StatefulSet"]
    name: str = Field(min_length=1)
    images: dict[str, str]  # container name -> image
    config_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    replicas: Annotated[int, Field(ge=0)]


class DecoyApplied(_Record):
    """A decoy of the schedule (a harmless ``redeploy`` or ``config`` edit of ``target``) as applied at ``t``,
    with the workload as it stood after it: what docs/metrics.md's collateral check expects at the end."""

    kind: Literal["decoy"] = "decoy"
    t: Seconds
    index: Annotated[int, Field(ge=0)]
    change: Literal["redeploy", "config"]
    target: str = Field(min_length=1)
    detail: str = ""
    workload: WorkloadState


class ServiceStates(_Record):
    """Every workload of the app's namespace at the run's start (before the first boundary) or its end
    (after the final reverts): what docs/metrics.md's collateral check compares."""

    kind: Literal["service_states"] = "service_states"
    moment: Literal["start", "end"]
    t: Seconds
    workloads: list[WorkloadState] = Field(default_factory=list)

    @field_validator("workloads")
    @classmethod
    def _one_per_workload_in_order(cls, values: list[WorkloadState]) -> list[WorkloadState]:
        keys = [(w.kind, w.name) for w in values]
        if len(set(keys)) != len(keys):
            raise ValueError("a workload is listed twice")
        return sorted(values, key=lambda w: (w.kind, w.name))


class Invocation(_Record):
    kind: Literal["invocation"] = "invocation"
    n: Annotated[int, Field(ge=0)]
    start_s: Seconds
    end_s: Seconds
    exit_code: int | None
    timed_out: bool


class ToolCall(_Record):
    kind: Literal["tool_call"] = "tool_call"
    invocation: int
    t: Seconds
    tool: str
    args: dict[str, JsonValue] = Field(default_factory=dict)
    effect: Literal["read", "report", "mutate", "none"]  # none: the request named no tool that exists
    decision: Literal["allowed", "denied", "forbidden"]
    reason: str = ""
    result: str = ""


class IncidentReport(_Record):
    """One ``incident_report`` call; a later report of the same incident replaces the earlier one."""

    kind: Literal["incident_report"] = "incident_report"
    t: Seconds
    incident_id: str = Field(min_length=1)
    alert_ids: list[str] = Field(default_factory=list)
    culprits: list[str] = Field(default_factory=list)
    artifact: str = ""
    status: Literal["open", "mitigated", "resolved"] = "open"
    notes: str = ""

    @field_validator("alert_ids", "culprits")
    @classmethod
    def _canonical_sets(cls, values: list[str]) -> list[str]:
        return _sorted_unique(values)


class Intervention(_Record):
    """An executed mutating tool call; ``t`` is when it completed."""

    kind: Literal["intervention"] = "intervention"
    t: Seconds
    tool: str
    targets: list[str] = Field(default_factory=list)
    incident_id: str | None = None
    result: Literal["ok", "error"]
    detail: str = ""

    @field_validator("targets")
    @classmethod
    def _canonical_sets(cls, values: list[str]) -> list[str]:
        return _sorted_unique(values)


class ForbiddenAttempt(_Record):
    kind: Literal["forbidden_attempt"] = "forbidden_attempt"
    t: Seconds
    tool: str
    args: dict[str, JsonValue] = Field(default_factory=dict)
    reason: str
    blocked: bool


class ModelCall(_Record):
    kind: Literal["model_call"] = "model_call"
    t: Seconds
    model: str
    tokens_in: Annotated[int, Field(ge=0)]
    tokens_out: Annotated[int, Field(ge=0)]


Record = (
    RunManifest
    | ScheduleRecord
    | RunEnded
    | FaultInjected
    | FaultReverted
    | FaultFailed
    | StateDrift
    | DecoyApplied
    | AlertRecord
    | RuleFailed
    | RuleHealth
    | ProbeSample
    | ArtifactSample
    | ServiceSample
    | Invocation
    | ToolCall
    | IncidentReport
    | Intervention
    | ForbiddenAttempt
    | ModelCall
    | ServiceStates
)

RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Annotated[Record, Field(discriminator="kind")])

# One JSON Lines file per family; the runner never chooses a file, the record's kind does.
STREAM_OF_KIND: dict[str, str] = {
    "run_manifest": "run",
    "schedule": "run",
    "run_ended": "run",
    "fault_injected": "faults",
    "fault_reverted": "faults",
    "fault_failed": "faults",
    "state_drift": "faults",
    "decoy": "faults",
    "alert": "alerts",
    "rule_failed": "rules",
    "rule_health": "rules",
    "probe_sample": "probes",
    "artifact_sample": "probes",
    "service_sample": "service",
    "invocation": "agent",
    "tool_call": "agent",
    "incident_report": "agent",
    "intervention": "agent",
    "forbidden_attempt": "agent",
    "model_call": "metering",
    "service_states": "state",
}
STREAMS: tuple[str, ...] = tuple(dict.fromkeys(STREAM_OF_KIND.values()))


def stream_of(record: Record) -> str:
    """The stream family a record belongs to (no side effects)."""
    return STREAM_OF_KIND[record.kind]
