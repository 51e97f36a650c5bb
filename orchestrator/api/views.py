"""Registry rows as API documents (no side effects)."""

from __future__ import annotations

from orchestrator.api.models import Links, Progress, RunView
from orchestrator.api.registry import RunRow


def links_of(run_id: str) -> Links:
    base = f"/runs/{run_id}"
    return Links(
        self=base,
        events=f"{base}/events",
        bundle=f"{base}/bundle",
        score=f"{base}/score",
        report=f"{base}/report",
    )


def view_of(row: RunRow) -> RunView:
    return RunView(
        id=row.id,
        app=row.app,
        seed=row.seed,
        agent=row.agent,
        backend=row.backend,
        clock=row.clock,
        status=row.status,
        source=row.source,
        created_at=row.created_at,
        ended_at=row.ended_at,
        progress=Progress(boundary=row.boundary, boundaries=row.boundaries, schedule_t_s=row.schedule_t),
        active_faults=row.active_faults,
        injections=row.injections,
        reverts=row.reverts,
        failures=row.failures,
        invocations=row.invocations,
        firing_alerts=row.firing,
        reason=row.reason,
        error=row.error,
        recovery=row.recovery,
        runner_run_id=row.runner_run_id,
        score=row.score,
        links=links_of(row.id),
    )
