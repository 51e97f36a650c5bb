"""``GET /nightly``: the nightly history, night by night (each execution of the matrix is one night, its runs
the registry's rows with the source ``nightly <night>``), and when the scheduler fires next."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, Field
from sqlalchemy import func, select

from orchestrator.api.nightly import SOURCE, next_run_at
from orchestrator.api.registry import Registry, runs

NIGHTS = 30  # the history's length: the newest nights


class NightRun(BaseModel):
    run_id: str
    app: str
    agent: str
    seed: int
    status: str
    marathon_score: float | None


class Night(BaseModel):
    night: str = Field(description="the night's name: the UTC time its matrix started")
    started_at: str
    runs: list[NightRun] = Field(description="in the order they were started")


class Nightly(BaseModel):
    next_run_at: str | None = Field(description="the scheduler's next fire time; null when none is scheduled")
    nights: list[Night] = Field(description=f"newest first, at most {NIGHTS}")


def night_history(registry: Registry, *, limit: int = NIGHTS) -> list[Night]:
    """The newest ``limit`` nights with their runs; a night's ``started_at`` is its name, or for a night
    named by its date only (older releases) its first run's creation time."""
    c = runs.c
    nightly = c.source.like(f"{SOURCE} %")
    first = func.min(c.seq)
    with registry.engine.connect() as connection:
        nights = connection.execute(
            select(c.source, func.min(c.created_at)).where(nightly).group_by(c.source)
            .order_by(first.desc()).limit(limit)
        ).all()  # fmt: skip
        sources = [source for source, _ in nights]
        rows = connection.execute(
            select(c.source, c.id, c.app, c.agent, c.seed, c.status, c.marathon_score)
            .where(c.source.in_(sources)).order_by(c.seq)
        ).all()  # fmt: skip
    by_source: dict[str, list[NightRun]] = {source: [] for source in sources}
    for source, run_id, app, agent, seed, status, score in rows:
        by_source[source].append(
            NightRun(run_id=run_id, app=app, agent=agent, seed=seed, status=status, marathon_score=score)
        )
    history = []
    for source, created in nights:
        name = source.removeprefix(f"{SOURCE} ")
        history.append(Night(night=name, started_at=name if "T" in name else created, runs=by_source[source]))
    return history


def mount_nightly(app: FastAPI, registry: Registry) -> None:
    @app.get("/nightly", response_model=Nightly, summary="Nightly history")
    def get_nightly() -> Nightly:
        """The newest nights, newest first, each with its runs, and when the scheduler fires next."""
        return Nightly(next_run_at=next_run_at(), nights=night_history(registry))
