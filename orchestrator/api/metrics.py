"""The control plane's own Prometheus metrics, for operators only: they live on the control plane's port,
never in the run's Prometheus, so an agent's ``query_metrics`` cannot see them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from orchestrator.run.events import Failed, Injected, Invoked, Reverted, RunEvent

INVOCATION_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 300)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.active_faults = Gauge(
            "marathon_active_faults",
            "Faults applied and not yet reverted, per run",
            ["run", "app"],
            registry=r,
        )
        self.active_runs = Gauge("marathon_active_runs", "Runs queued or running", registry=r)
        self.injections = Counter("marathon_injections", "Faults injected", ["app", "category"], registry=r)
        self.reverts = Counter("marathon_reverts", "Faults reverted", ["app", "outcome"], registry=r)
        self.failures = Counter(
            "marathon_failures", "Failed injections, reverts and observations", ["app"], registry=r
        )
        self.runs_ended = Counter(
            "marathon_runs_ended", "Runs ended, by status and source (api or nightly)", ["status", "source"],
            registry=r,
        )  # fmt: skip
        self.invocations = Histogram(
            "marathon_invocation_duration_seconds",
            "Wall seconds of each agent invocation",
            ["app", "agent"],
            buckets=INVOCATION_BUCKETS,
            registry=r,
        )

    def observe(self, *, run: str, app: str, agent: str, event: RunEvent, active: int) -> None:
        match event:
            case Injected(category=category):
                self.injections.labels(app=app, category=category).inc()
            case Reverted(outcome=outcome):
                self.reverts.labels(app=app, outcome=outcome).inc()
            case Failed():
                self.failures.labels(app=app).inc()
            case Invoked(wall_s=wall_s):
                self.invocations.labels(app=app, agent=agent).observe(wall_s)
        self.active_faults.labels(run=run, app=app).set(active)

    def ended(self, *, status: str, source: str) -> None:
        """Count a run's end; a nightly run's source (``nightly <stamp>``) counts as ``nightly``."""
        self.runs_ended.labels(status=status, source=source.split(" ", 1)[0]).inc()

    def forget(self, *, run: str, app: str) -> None:
        with contextlib.suppress(KeyError):
            self.active_faults.remove(run, app)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
