"""The leaderboard: per app x agent, the mean marathon score over seeds with its 95 % Student t interval,
the mean component figures and how consistently each kind of fault is resolved; runs that did not complete
are listed apart (no side effects). Used by ``GET /leaderboard`` and ``marathon leaderboard``; the interval
is ``orchestrator.score.aggregate``'s, the one the report's seed aggregate shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.api.models import (
    IncompleteRun,
    Interval,
    KindShare,
    Leaderboard,
    LeaderboardRow,
    ScoreEntry,
    SeedScore,
)
from orchestrator.score.aggregate import CONFIDENCE, KindOutcome, consistency_of, estimate, handled_end_to_end

if TYPE_CHECKING:
    from orchestrator.api.registry import RunRow

# The scorecard's shares and levels (docs/metrics.md) that are averaged when a run's score holds them.
COMPONENTS = ("corr", "loc", "loc_strict", "rep", "risk", "degradation_level")


@dataclass(frozen=True)
class Result:
    """One ended run as the leaderboard sees it, from a registry row or from a bundle.

    ``status`` is the registry's (``finished``, ``stopped``, ``failed``, ``interrupted``) or ``partial``
    for a bundle whose journal was never closed; ``order`` grows with the time the run started."""

    run_id: str
    app: str
    agent: str
    seed: int
    status: str
    reason: str | None
    score: dict[str, Any] | None
    order: tuple[str, int]
    created_at: str
    link: str
    report: str | None

    @property
    def completed(self) -> bool:
        """Finished with a score, and not ended for any reason but completion. The control plane writes
        ``finished`` only for a completed run, so a row without a reason counts as completed."""
        return (
            self.status == "finished"
            and self.reason in (None, "completed")
            and self.score is not None
            and isinstance(self.score.get("marathon_score"), int | float)
        )

    @property
    def marathon_score(self) -> float:
        assert self.score is not None
        return float(self.score["marathon_score"])


def result_of_row(row: RunRow) -> Result:
    """A registry row as a leaderboard input (no side effects)."""
    return Result(
        run_id=row.id, app=row.app, agent=row.agent, seed=row.seed, status=row.status, reason=row.reason,
        score=row.score, order=("", row.seq), created_at=row.created_at, link=f"/runs/{row.id}",
        report=f"/runs/{row.id}/report",
    )  # fmt: skip


def leaderboard(results: Iterable[Result]) -> Leaderboard:
    """The leaderboard of ended runs (no side effects).

    Only completed runs (``finished``, end reason ``completed``, with a score) enter a row. A seed with
    several completed runs of one app x agent counts once, by its latest run (greatest ``order``), so every
    seed weighs the same in the mean; ``runs``, ``best`` and ``latest`` still look at every completed run
    (a tie for best goes to the earlier run). The interval is the two-sided 95 % Student t interval of the
    mean over seeds (n - 1 degrees of freedom); with one seed there is none (``ci95`` is null). Stopped,
    failed, interrupted and partial runs are listed in ``incomplete`` with their status, never averaged.
    Rows are ordered by app, then mean descending, then agent."""
    ordered = sorted(results, key=lambda r: r.order)
    groups: dict[tuple[str, str], list[Result]] = {}
    incomplete: list[IncompleteRun] = []
    for result in ordered:
        if result.completed:
            groups.setdefault((result.app, result.agent), []).append(result)
        else:
            incomplete.append(
                IncompleteRun(
                    run_id=result.run_id,
                    app=result.app,
                    agent=result.agent,
                    seed=result.seed,
                    status=result.status,
                    reason=result.reason,
                    link=result.link,
                )
            )
    rows = [_row(app, agent, members) for (app, agent), members in groups.items()]
    rows.sort(key=lambda r: (r.app, -r.mean, r.agent))
    return Leaderboard(rows=rows, incomplete=incomplete)


def leaderboard_rows(ended: Iterable[RunRow]) -> list[LeaderboardRow]:
    """The rows of the leaderboard of registry rows (no side effects)."""
    return leaderboard(result_of_row(row) for row in ended).rows


def _row(app: str, agent: str, members: Sequence[Result]) -> LeaderboardRow:
    """``members`` completed runs of one app x agent, oldest first."""
    per_seed: dict[int, Result] = {}
    for member in members:
        per_seed[member.seed] = member  # the latest run of each seed wins
    counted = [per_seed[seed] for seed in sorted(per_seed)]
    figure = estimate([r.marathon_score for r in counted])  # the report's seed aggregate computes the same
    assert figure.mean is not None
    interval = None
    if figure.low is not None and figure.high is not None:
        half_width = (figure.high - figure.low) / 2
        interval = Interval(level=CONFIDENCE, low=figure.low, high=figure.high, half_width=half_width)
    kinds = kind_shares(counted)
    best = members[0]
    for member in members[1:]:
        if member.marathon_score > best.marathon_score:
            best = member
    return LeaderboardRow(
        app=app,
        agent=agent,
        n=figure.n,
        seeds=sorted(per_seed),
        mean=figure.mean,
        ci95=interval,
        components=component_means(counted),
        consistency=math.fsum(k.share for k in kinds) / len(kinds) if kinds else None,
        kinds=kinds,
        counted=[SeedScore(seed=r.seed, run_id=r.run_id, marathon_score=r.marathon_score) for r in counted],
        runs=len(members),
        best=_entry(best),
        latest=_entry(members[-1]),
    )


def component_means(counted: Sequence[Result]) -> dict[str, float]:
    """The mean of each component figure over the runs whose score holds it as a number; a figure no run
    holds (a degradation level without a baseline, a risk without interventions) is left out."""
    means: dict[str, float] = {}
    for key in COMPONENTS:
        values = [float(v) for r in counted if r.score and isinstance(v := r.score.get(key), int | float)]
        if values:
            means[key] = math.fsum(values) / len(values)
    return means


def kind_shares(counted: Sequence[Result]) -> list[KindShare]:
    """For each fault kind (catalog id) in the counted runs' outcomes: the seeds whose run injected it, and
    of those the share where it was resolved, as the report's seed aggregate counts it
    (``orchestrator.score.aggregate.consistency_of``). Ordered by catalog id (no side effects)."""
    runs = [
        [
            KindOutcome(
                catalog_id=str(o.get("catalog_id", "")), category=str(o.get("category", "")),
                mechanism=str(o.get("mechanism", "")),
                handled=handled_end_to_end(o.get("a", 0), o.get("b", 0), o.get("c", 0)),
            )  # fmt: skip
            for o in (result.score or {}).get("outcomes") or []
        ]
        for result in counted
    ]
    return [
        KindShare(catalog_id=k.catalog_id, seeds=k.seeds, resolved=k.resolved, share=k.share)
        for k in consistency_of(runs)
    ]


def _entry(result: Result) -> ScoreEntry:
    return ScoreEntry(
        run_id=result.run_id, seed=result.seed, marathon_score=result.marathon_score,
        created_at=result.created_at, link=result.link, report=result.report,
    )  # fmt: skip
