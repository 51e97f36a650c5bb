"""The control plane's request and response documents (pydantic; they define the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["queued", "running", "stopping", "finished", "stopped", "failed", "interrupted"]
Source = Literal["api", "cli", "nightly"]  # who started a run (a nightly run's source is dated)
WEEK_S = 7 * 24 * 3600


class ScheduleOverrides(BaseModel):
    """Schedule parameters to change from the runner's defaults; every one is optional."""

    model_config = ConfigDict(extra="forbid")

    faults: int | None = Field(default=None, ge=0, le=1000, description="fault arrivals to draw")
    delta_s: int | None = Field(default=None, ge=1, le=3600, description="seconds between invocations")
    budget_s: float | None = Field(default=None, gt=0, le=3600, description="wall seconds per invocation")
    injection_period_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    observation_period_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    min_duration_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    max_duration_s: int | None = Field(default=None, ge=1, le=WEEK_S)
    max_concurrent: int | None = Field(default=None, ge=1, le=1000)
    exclusive_culprits: bool | None = Field(
        default=None, description="one active fault per culprit service at a time (default true)"
    )
    sample_step_s: int | None = Field(default=None, ge=5, le=3600)


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
    boundary: int
    boundaries: int
    schedule_t_s: float


class Links(BaseModel):
    self: str
    events: str
    bundle: str
    score: str
    report: str


class RunView(BaseModel):
    id: str
    app: str
    seed: int
    agent: str
    backend: str
    clock: str
    status: Status
    source: str
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
    score: dict[str, Any] | None
    links: Links


class RunPage(BaseModel):
    total: int
    offset: int
    limit: int
    runs: list[RunView]


class Created(BaseModel):
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
    status: Literal["ok"]
    active_runs: int


class ErrorBody(BaseModel):
    detail: str
