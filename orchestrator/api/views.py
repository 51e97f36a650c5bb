"""Registry rows as API documents (no side effects)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from orchestrator.api.events import EventLog
from orchestrator.api.models import Links, Progress, RunView
from orchestrator.api.registry import RunRow

EventsOf = Callable[[RunRow], EventLog]


def links_of(run_id: str) -> Links:
    base = f"/runs/{run_id}"
    return Links(
        self=base,
        events=f"{base}/events",
        bundle=f"{base}/bundle",
        score=f"{base}/score",
        report=f"{base}/report",
    )


def public_live(events: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The categories of the faults active after ``events`` (wire form) and the rule names of the alerts
    firing then, each sorted (no side effects).

    Only what anyone may see while a run is live: a category and an alert's rule, never a fault's target or
    catalog entry (the agent under test may be the one looking)."""
    faults: dict[str, str] = {}
    alerts: dict[str, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "injected":
            faults[str(event["fault_id"])] = str(event["category"])
        elif kind == "reverted":
            faults.pop(str(event["fault_id"]), None)
        elif kind == "alert" and event.get("state") == "firing":
            alerts[str(event["alert_id"])] = str(event["rule"])
        elif kind == "alert":
            alerts.pop(str(event["alert_id"]), None)
        elif kind in ("ended", "finished", "interrupted"):
            faults.clear()
            alerts.clear()
    return sorted(faults.values()), sorted(alerts.values())


def view_of(row: RunRow, events_of: EventsOf | None = None) -> RunView:
    """The run's document; ``events_of`` gives a live run's event log, from which the categories of its
    active faults and the names of its firing alerts are read (an ended run has neither)."""
    categories: list[str] = []
    alert_names: list[str] = []
    if row.active and events_of is not None:
        events, _closed = events_of(row).since(0)
        categories, alert_names = public_live(events)
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
        active_fault_categories=categories,
        injections=row.injections,
        reverts=row.reverts,
        failures=row.failures,
        invocations=row.invocations,
        firing_alerts=row.firing,
        firing_alert_names=alert_names,
        reason=row.reason,
        error=row.error,
        recovery=row.recovery,
        runner_run_id=row.runner_run_id,
        score=row.score,
        links=links_of(row.id),
    )
