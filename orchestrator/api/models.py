"""The control plane's request and response documents (pydantic; they define the OpenAPI schema)."""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from orchestrator.run.events import Event

Status = Literal["queued", "running", "stopping", "finished", "stopped", "failed", "interrupted"]
Source = Literal["api", "cli", "nightly"]  # who started a run (a nightly run's source is dated)
WEEK_S = 7 * 24 * 3600


class ScheduleOverrides(BaseModel):
    """Schedule parameters to change from the runner's defaults; every one is optional."""

    model_config = ConfigDict(extra="forbid")

    faults: int | None = Field(
        default=None, ge=0, le=1000, description="fault arrivals (default: the app's published_schedule)"
    )
    delta_s: int | None = Field(default=None, ge=1, le=3600, description="seconds between invocations")
    budget_s: float | None = Field(default=None, gt=0, le=3600, description="wall seconds per invocation")
    injection_period_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    observation_period_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    min_duration_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    max_duration_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    max_concurrent: Annotated[int, Field(ge=1, le=1000)] | Literal["none"] | None = Field(
        default=None, description="most faults active at once, or 'none' (default: the app's published cap)"
    )
    exclusive_culprits: bool | None = Field(
        default=None, description="one active fault per culprit service at a time (default true)"
    )
    sample_step_s: int | None = Field(default=None, ge=5, le=3600)
    decoys: int | None = Field(
        default=None, ge=0, le=1000, description="harmless changes on services no active fault touches"
    )


class RunRequest(BaseModel):
    """A marathon to start: the app, the seed, the agent under test, where and how fast."""

    model_config = ConfigDict(extra="forbid")

    app: str = Field(min_length=1, max_length=64, examples=["online-boutique"])
    seed: int = Field(ge=0, le=2**31 - 1)
    agent: str = Field(min_length=1, max_length=64, description="a baseline agent by name", examples=["noop"])
    backend: Literal["twin", "kube"] = "twin"
    clock: Literal["stepped", "realtime"] | None = Field(
        default=None, description="stepped (twin default) or realtime (always for kube)"
    )
    speed: float = Field(default=1.0, gt=0, le=1000, description="realtime twin: simulated s per wall s")
    kubeconfig: str | None = Field(default=None, max_length=4096, description="kube backend: the cluster")
    prometheus_url: str | None = Field(default=None, max_length=2048, description="kube backend")
    baseline: bool = Field(default=True, description="also score against the no-action baseline")
    model_url: str | None = Field(default=None, max_length=2048, description="upstream model URL to meter")
    token_budget: int | None = Field(default=None, ge=1, le=10**9, description="model tokens per invocation")
    schedule: ScheduleOverrides = Field(default_factory=ScheduleOverrides)


class Progress(BaseModel):
    """How far the run is: boundaries done of all, and the schedule time reached."""

    boundary: int = Field(description="the last boundary whose agent invocation returned; 0 before the first")
    boundaries: int = Field(description="boundaries in the run's schedule; 0 until the first one is done")
    schedule_t_s: float = Field(description="schedule seconds from the run's start at that boundary")


class Links(BaseModel):
    """The run's resources, as paths on this server."""

    self: str
    events: str
    bundle: str
    score: str
    report: str


class RunView(BaseModel):
    """A run as the registry keeps it. Public: live faults by id and counts, never their catalog entries."""

    id: str
    app: str
    seed: int
    agent: str
    backend: str
    clock: str
    status: Status
    source: str = Field(description="who started it: api, cli, or nightly and the night's UTC start")
    created_at: str
    ended_at: str | None
    progress: Progress
    active_faults: list[str]
    active_fault_categories: list[str] = Field(
        default_factory=list,
        description="the category of each active fault, sorted; never which service or artifact it hit",
    )
    injections: int
    reverts: int
    failures: int
    invocations: int
    firing_alerts: int
    firing_alert_names: list[str] = Field(
        default_factory=list, description="the rule name of each firing alert, sorted (as alert sinks show)"
    )
    reason: str | None
    error: str | None
    recovery: str | None
    runner_run_id: str | None
    score: dict[str, Any] | None = Field(description="the Score document once the run is scored, else null")
    links: Links


class RunPage(BaseModel):
    """One page of runs, newest first, and how many match the filters in all."""

    total: int
    offset: int
    limit: int
    runs: list[RunView]


class Created(BaseModel):
    """A run that was started: its id and where to follow it."""

    id: str
    status: Status
    links: Links


class ScoreEntry(BaseModel):
    run_id: str
    seed: int
    marathon_score: float
    created_at: str
    link: str
    report: str | None = Field(description="the run's HTML report (null for a bundle read from disk)")


class SeedScore(BaseModel):
    seed: int
    run_id: str = Field(description="the seed's latest completed run, the one counted")
    marathon_score: float


class Interval(BaseModel):
    """A two-sided Student t confidence interval of the mean over seeds."""

    level: float = Field(description="the confidence level, 0.95")
    low: float
    high: float
    half_width: float = Field(description="the mean plus or minus this is the interval")


class KindShare(BaseModel):
    catalog_id: str = Field(description="a fault kind: its catalog entry")
    seeds: int = Field(description="counted seeds whose run injected this kind")
    resolved: int = Field(
        description="of those, seeds where every fault of this kind was handled end to end (a = b = c = 1)"
    )
    share: float = Field(description="resolved / seeds")


class LeaderboardRow(BaseModel):
    """One app x agent over its completed runs, one run per seed (the latest)."""

    app: str
    agent: str
    n: int = Field(description="seeds counted")
    seeds: list[int]
    mean: float = Field(description="mean marathon score over the seeds")
    ci95: Interval | None = Field(
        description="95 % Student t interval of the mean; null with one seed (no spread to estimate)"
    )
    components: dict[str, float] = Field(
        description="mean over the seeds of each scorecard figure present: corr, loc, loc_strict, rep, "
        "risk, degradation_level"
    )
    consistency: float | None = Field(
        description="mean over fault kinds of the share of seeds resolving the kind (null with no fault)"
    )
    kinds: list[KindShare]
    counted: list[SeedScore]
    runs: int = Field(description="completed runs, a seed's earlier runs included")
    best: ScoreEntry
    latest: ScoreEntry


class IncompleteRun(BaseModel):
    """An ended run kept out of the means: stopped, failed, interrupted, partial or not scored."""

    run_id: str
    app: str
    agent: str
    seed: int
    status: str
    reason: str | None
    link: str


class Leaderboard(BaseModel):
    rows: list[LeaderboardRow]
    incomplete: list[IncompleteRun] = Field(description="ended runs that are in no mean, with their status")


class Health(BaseModel):
    """The server answers."""

    status: Literal["ok"]
    active_runs: int = Field(description="runs this server follows now")


class ErrorBody(BaseModel):
    detail: str


# The score: docs/metrics.md's ``--json`` document (``scorecard_json``), as the registry keeps it.


class MedianTime(BaseModel):
    """A median over the faults that reached a stage, and how many did."""

    median: float | None = Field(description="seconds: the ceil(n/2)-th smallest value; null when n = 0")
    n: int = Field(ge=0, description="faults the median is taken over")


class FaultScore(BaseModel):
    """One fault's stages and outcome (docs/metrics.md, "Outcome per fault")."""

    id: str = Field(description="the fault id")
    catalog_id: str = Field(description="the catalog entry")
    category: str = Field(description="the fault's category")
    mechanism: str = Field(description="code, config or chaos")
    a: int = Field(ge=0, le=1, description="a_f: 1 when an incident of the agent's matched the fault (Corr)")
    b: int = Field(ge=0, le=1, description="b_f: 1 when a report diagnosed it (Loc)")
    c: int = Field(ge=0, le=1, description="c_f: 1 when the agent's repair of it was verified (Rep)")
    # Absent from the scores of bundles scored before it existed; their documents are served as written.
    resolved: int | None = Field(
        default=None,
        ge=0,
        le=1,
        description="1 when located and repaired with no collateral charged to its incident; null: unknown",
    )
    outcome: Literal[
        "missed", "correlated_only", "located_without_repair", "acted_on_without_repair", "handled_end_to_end"
    ]


class ResolvedCount(BaseModel):
    """How many faults were resolved, and their share of the faults; null when collateral is unknown."""

    n: int | None = Field(ge=0, description="faults resolved")
    share: float | None = Field(description="resolved faults over all faults")


class CollateralDifference(BaseModel):
    """One workload field outside every fault's scope that the agent touched and left changed."""

    workload: str = Field(description="KIND/name")
    field: str = Field(description="exists, images, config or replicas")
    start: str = Field(description="its value at the run's start")
    end: str = Field(description="its value at the run's end")
    incidents: list[str] = Field(description="incidents referenced by the interventions that touched it")


class Score(BaseModel):
    """A run's scorecard: the ``marathon score BUNDLE --json`` document, key for key (docs/metrics.md)."""

    marathon_score: float = Field(description="the Marathon-Score, 0 to 100, rounded to 1 decimal")
    corr: float = Field(description="Corr: the fraction of faults correlated")
    loc: float = Field(description="Loc: the fraction located")
    loc_strict: float = Field(description="Loc-strict: located on the first report")
    rep: float = Field(description="Rep: the fraction repaired")
    risk: float | None = Field(description="Risk, or null when the agent took no action")
    degradation_level: float | None = Field(
        description="the run's degradation in percent of the no-action baseline's; null without a baseline"
    )
    mttd_s: MedianTime = Field(description="median time to detect")
    mttl_s: MedianTime = Field(description="median time to locate")
    mttr_s: MedianTime = Field(description="median time to repair")
    faults: int = Field(ge=0, description="scored faults, |F|")
    forbidden_attempts: int = Field(ge=0, description="actions the policy refused")
    interventions: int = Field(ge=0, description="interventions executed")
    # The next three are absent from scores written before they existed; such documents are served as written.
    ambiguity_share: float | None = Field(
        default=None, description="of the attributable alerts, the fraction attributable to several faults"
    )
    resolved: ResolvedCount | None = Field(default=None, description="faults resolved, count and share")
    collateral: list[CollateralDifference] | None = Field(
        default=None,
        description="differences the agent left outside every fault's scope; null when not recorded",
    )
    model_calls: int = Field(ge=0, description="metered model calls")
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    cost_usd: float = Field(ge=0, description="the model calls' price in dollars")
    sandboxed: bool = Field(
        default=True,
        # The document says it only when false, so a sandboxed run's score reads as the scorer wrote it.
        exclude_if=lambda sandboxed: sandboxed is True,
        description="present, and false, only when the agent ran without its sandbox (not comparable)",
    )
    outcomes: list[FaultScore] = Field(description="one per fault, in injection order")


# The live events: ``orchestrator.run.events`` in their wire form, numbered, as the SSE stream sends them.
# Their models are made from the dataclasses themselves, so the documented schema follows the events.


def _event_model(kind: type) -> type[BaseModel]:
    hints = typing.get_type_hints(kind)
    fields: dict[str, Any] = {
        "seq": (int, Field(ge=0, description="the event's number in the run, from 0; the SSE id")),
        "type": (Literal[kind.TYPE], Field(description="the event type; the SSE event name")),  # type: ignore[attr-defined]
    }
    for field in dataclasses.fields(kind):
        hint = hints[field.name]
        if typing.get_origin(hint) is tuple:  # a tuple goes on the wire as a list
            hint = list[typing.get_args(hint)[0]]  # type: ignore[misc]
        default = field.default if field.default is not dataclasses.MISSING else ...
        if isinstance(default, tuple):
            default = list(default)
        fields[field.name] = (hint, default)
    name = "".join(part.capitalize() for part in kind.TYPE.split("_")) + "Event"  # type: ignore[attr-defined]
    doc = (kind.__doc__ or "").strip() if not (kind.__doc__ or "").startswith(f"{kind.__name__}(") else ""
    model: type[BaseModel] = create_model(name, __doc__=doc or f"A {kind.TYPE} event.", **fields)  # type: ignore[attr-defined]
    return model


EVENT_MODELS: tuple[type[BaseModel], ...] = tuple(_event_model(kind) for kind in typing.get_args(Event))
LiveEvent: Any = Annotated[Union[EVENT_MODELS], Field(discriminator="type")]  # noqa: UP007
