"""The control plane's request and response documents (pydantic; they define the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["queued", "running", "stopping", "finished", "stopped", "failed", "interrupted"]
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
    injections: int
    reverts: int
    failures: int
    invocations: int
    firing_alerts: int
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
    marathon_score: float
    created_at: str
    link: str
    report: str


class LeaderboardRow(BaseModel):
    app: str
    agent: str
    runs: int
    best: ScoreEntry
    latest: ScoreEntry


class Leaderboard(BaseModel):
    rows: list[LeaderboardRow]


class Health(BaseModel):
    status: Literal["ok"]
    active_runs: int


class ErrorBody(BaseModel):
    detail: str
