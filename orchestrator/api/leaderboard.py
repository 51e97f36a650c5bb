"""The leaderboard: the best and the latest score of every app x agent pair (no side effects)."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.api.models import LeaderboardRow, ScoreEntry
from orchestrator.api.registry import RunRow


def _entry(row: RunRow) -> ScoreEntry:
    assert row.marathon_score is not None
    return ScoreEntry(
        run_id=row.id,
        marathon_score=row.marathon_score,
        created_at=row.created_at,
        link=f"/runs/{row.id}",
        report=f"/runs/{row.id}/report",
    )


def leaderboard_rows(scored: Iterable[RunRow]) -> list[LeaderboardRow]:
    """``scored`` oldest first; ties for best go to the earlier run. Rows ordered by app, then best score
    descending, then agent (no side effects)."""
    groups: dict[tuple[str, str], list[RunRow]] = {}
    for row in scored:
        if row.marathon_score is not None:
            groups.setdefault((row.app, row.agent), []).append(row)
    rows = []
    for (app, agent), members in groups.items():
        best = members[0]
        for member in members[1:]:
            assert member.marathon_score is not None and best.marathon_score is not None
            if member.marathon_score > best.marathon_score:
                best = member
        rows.append(
            LeaderboardRow(
                app=app, agent=agent, runs=len(members), best=_entry(best), latest=_entry(members[-1])
            )
        )
    return sorted(rows, key=lambda r: (r.app, -r.best.marathon_score, r.agent))
