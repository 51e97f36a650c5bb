"""The control plane's own Prometheus metrics, for operators only: they live on the control plane's port,
never in the run's Prometheus, so an agent's ``query_metrics`` cannot see them.

Runs, their live state and their scores are read from the run registry at each scrape, so every run is
counted whichever process follows it (this server, another one, a ``nightly --once``); the event counters
and invocation times are this server's, observed as its runs report.
"""

from __future__ import annotations

import json
from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from orchestrator.api.leaderboard import leaderboard_rows
from orchestrator.api.models import LeaderboardRow
from orchestrator.api.registry import ACTIVE, ENDED, STATUSES, Registry, runs
from orchestrator.run.events import Failed, Injected, Invoked, Reverted, RunEvent

INVOCATION_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 300)
# Scored runs exposed one by one, per app x agent: the newest ones, so the series count stays bounded.
LATEST_SCORES = 10

RUN_LABELS = ("run_id", "app", "agent", "source")
PAIR_LABELS = ("app", "agent")


class Metrics:
    def __init__(self, registry: Registry | None = None, *, latest_scores: int = LATEST_SCORES) -> None:
        """``registry``: the run registry to read runs and scores from at each scrape (none: the event
        counters only, as a ``nightly --once`` process keeps them)."""
        self.registry = CollectorRegistry()
        r = self.registry
        self.injections = Counter("marathon_injections", "Faults injected", ["app", "category"], registry=r)
        self.reverts = Counter("marathon_reverts", "Faults reverted", ["app", "outcome"], registry=r)
        self.failures = Counter(
            "marathon_failures", "Failed injections, reverts and observations", ["app"], registry=r
        )
        self.invocations = Histogram(
            "marathon_invocation_duration_seconds",
            "Wall seconds of each agent invocation",
            ["app", "agent"],
            buckets=INVOCATION_BUCKETS,
            registry=r,
        )
        if registry is not None:
            r.register(RegistryCollector(registry, latest_scores=latest_scores))

    def observe(self, *, app: str, agent: str, event: RunEvent) -> None:
        match event:
            case Injected(category=category):
                self.injections.labels(app=app, category=category).inc()
            case Reverted(outcome=outcome):
                self.reverts.labels(app=app, outcome=outcome).inc()
            case Failed():
                self.failures.labels(app=app).inc()
            case Invoked(wall_s=wall_s):
                self.invocations.labels(app=app, agent=agent).observe(wall_s)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


# What a scrape reads from the registry.


@dataclass(frozen=True)
class LiveRun:
    run_id: str
    app: str
    agent: str
    source: str
    active_faults: int
    firing: int
    invocations: int


@dataclass(frozen=True)
class ScoredRun:
    run_id: str
    app: str
    agent: str
    seed: int
    score: float


@dataclass(frozen=True)
class Snapshot:
    by_status: dict[tuple[str, str], int]  # (status, source) -> runs
    live: list[LiveRun]
    invocations: dict[tuple[str, str], int]  # (app, agent) -> agent invocations, every run
    scored: list[ScoredRun]  # oldest first
    board: list[LeaderboardRow]


def source_label(source: str) -> str:
    """A run's source as a label: ``nightly 2026-12-01`` is ``nightly`` (no side effects)."""
    return source.split(" ", 1)[0] or "unknown"


def read_snapshot(registry: Registry) -> Snapshot:
    """One consistent read of what /metrics tells about runs; ``SQLAlchemyError`` when the database fails."""
    c = runs.c
    with registry.engine.begin() as tx:
        grouped = tx.execute(select(c.status, c.source, func.count()).group_by(c.status, c.source)).all()
        live = tx.execute(
            select(c.id, c.app, c.agent, c.source, c.active_faults, c.firing, c.invocations)
            .where(c.status.in_(ACTIVE))
            .order_by(c.seq)
        ).all()
        invocations = tx.execute(
            select(c.app, c.agent, func.sum(c.invocations)).group_by(c.app, c.agent)
        ).all()
        scored = tx.execute(
            select(c.id, c.app, c.agent, c.seed, c.marathon_score)
            .where(c.marathon_score.is_not(None))
            .order_by(c.seq)
        ).all()
    by_status: Tally[tuple[str, str]] = Tally()
    for status, source, count in grouped:
        by_status[(status, source_label(source))] += int(count)
    return Snapshot(
        by_status=dict(by_status),
        live=[
            LiveRun(
                run_id=i,
                app=a,
                agent=g,
                source=source_label(s),
                active_faults=len(_json_list(f)),
                firing=int(n),
                invocations=int(v),
            )  # fmt: skip
            for i, a, g, s, f, n, v in live
        ],
        invocations={(a, g): int(v or 0) for a, g, v in invocations},
        scored=[ScoredRun(run_id=i, app=a, agent=g, seed=int(s), score=float(m)) for i, a, g, s, m in scored],
        board=leaderboard_rows(registry.ended()),
    )


def _json_list(text: str | None) -> list[Any]:
    value = json.loads(text or "[]")
    return value if isinstance(value, list) else []


def snapshot_families(snapshot: Snapshot, *, latest_scores: int) -> Iterator[Metric]:
    """The metric families of one registry snapshot (no side effects)."""
    yield from _run_counts(snapshot.by_status)
    yield from _live(snapshot.live)
    agent_calls = CounterMetricFamily(
        "marathon_agent_invocations", "Agent invocations of every run in the registry", labels=PAIR_LABELS
    )
    for (app, agent), count in sorted(snapshot.invocations.items()):
        agent_calls.add_metric([app, agent], count)
    yield agent_calls
    yield from _scores(snapshot.scored, snapshot.board, latest=latest_scores)


def _run_counts(by_status: dict[tuple[str, str], int]) -> Iterator[Metric]:
    sources = sorted({source for _, source in by_status} | {"api"})
    in_status = GaugeMetricFamily(
        "marathon_runs", "Runs in the registry, by status and source (api, nightly, ...)",
        labels=("status", "source"),
    )  # fmt: skip
    ended = CounterMetricFamily(
        "marathon_runs_ended",
        "Runs ended, by status and source (api, nightly, ...)",
        labels=("status", "source"),
    )
    for source in sources:
        for status in STATUSES:
            count = by_status.get((status, source), 0)
            in_status.add_metric([status, source], count)
            if status in ENDED:
                ended.add_metric([status, source], count)
    active = GaugeMetricFamily("marathon_active_runs", "Runs queued, running or stopping")
    active.add_metric([], sum(n for (status, _), n in by_status.items() if status in ACTIVE))
    return iter((in_status, ended, active))


def _live(live: Sequence[LiveRun]) -> Iterator[Metric]:
    faults = GaugeMetricFamily(
        "marathon_run_active_faults", "Faults applied and not yet reverted, per active run", labels=RUN_LABELS
    )
    firing = GaugeMetricFamily(
        "marathon_run_firing_alerts", "Alerts firing at the last boundary, per active run", labels=RUN_LABELS
    )
    calls = CounterMetricFamily(
        "marathon_run_agent_invocations", "Agent invocations so far, per active run", labels=RUN_LABELS
    )
    for run in live:
        labels = [run.run_id, run.app, run.agent, run.source]
        faults.add_metric(labels, run.active_faults)
        firing.add_metric(labels, run.firing)
        calls.add_metric(labels, run.invocations)
    return iter((faults, firing, calls))


def _scores(scored: Sequence[ScoredRun], board: Sequence[LeaderboardRow], *, latest: int) -> Iterator[Metric]:
    pairs: dict[tuple[str, str], list[ScoredRun]] = {}
    for run in scored:
        pairs.setdefault((run.app, run.agent), []).append(run)
    each = GaugeMetricFamily(
        "marathon_run_score",
        f"Marathon-Score of a scored run, the newest {latest} per app and agent",
        labels=("app", "agent", "seed", "run_id"),
    )
    for (app, agent), members in sorted(pairs.items()):
        for run in members[-latest:]:
            each.add_metric([app, agent, str(run.seed), run.run_id], run.score)
    # The leaderboard's own figures (GET /leaderboard): completed runs only, one per seed in the mean.
    families = {
        "mean": GaugeMetricFamily(
            "marathon_leaderboard_mean_score", "Mean Marathon-Score over seeds (the leaderboard's)",
            labels=PAIR_LABELS,
        ),
        "ci95": GaugeMetricFamily(
            "marathon_leaderboard_ci95_half_width", "Half-width of the mean's 95 % Student t interval",
            labels=PAIR_LABELS,
        ),
        "seeds": GaugeMetricFamily("marathon_leaderboard_seeds", "Seeds in the mean", labels=PAIR_LABELS),
        "best": GaugeMetricFamily(
            "marathon_leaderboard_best_score", "Best Marathon-Score of a completed run", labels=PAIR_LABELS
        ),
        "latest": GaugeMetricFamily(
            "marathon_leaderboard_latest_score", "Marathon-Score of the latest completed run",
            labels=PAIR_LABELS,
        ),
        "runs": GaugeMetricFamily("marathon_leaderboard_runs", "Completed runs", labels=PAIR_LABELS),
    }  # fmt: skip
    for row in board:
        figures = {"mean": row.mean, "seeds": float(row.n), "best": row.best.marathon_score,
                   "latest": row.latest.marathon_score, "runs": float(row.runs)}  # fmt: skip
        if row.ci95 is not None:
            figures["ci95"] = row.ci95.half_width
        for key, value in figures.items():
            families[key].add_metric([row.app, row.agent], value)
    return iter((each, *families.values()))


class RegistryCollector(Collector):
    """Reads the registry at each scrape; ``marathon_registry_up`` is 0 when it could not."""

    def __init__(self, registry: Registry, *, latest_scores: int) -> None:
        self._registry = registry
        self._latest = latest_scores

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("marathon_registry_up", "1 when the run registry answered this scrape")
        try:
            snapshot = read_snapshot(self._registry)
        except SQLAlchemyError:
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        return [up, *snapshot_families(snapshot, latest_scores=self._latest)]
