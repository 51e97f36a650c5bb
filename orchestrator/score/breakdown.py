"""Faults grouped by category and by mechanism, and the per-fault and per-group CSV tables (pure).

Group times are plain means over the faults of the group that reached the stage (the headline MTTx are
docs/metrics.md's medians over all faults; a mean per group is what a breakdown table compares).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orchestrator.score.scorecard import FaultOutcome


@dataclass(frozen=True)
class Group:
    name: str
    faults: int
    correlated: int
    located: int
    repaired: int  # c = 1: repaired, confirmed by probes or artifacts
    mean_ttd_s: float | None
    mean_ttl_s: float | None
    mean_ttr_s: float | None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_outcomes(outcomes: Sequence[FaultOutcome], key: Callable[[FaultOutcome], str]) -> list[Group]:
    """One ``Group`` per value of ``key``, in name order (no side effects)."""
    members: dict[str, list[FaultOutcome]] = {}
    for o in outcomes:
        members.setdefault(key(o), []).append(o)
    return [
        Group(
            name=name,
            faults=len(group),
            correlated=sum(o.a for o in group),
            located=sum(o.b for o in group),
            repaired=sum(o.c for o in group),
            mean_ttd_s=_mean([o.detected_s for o in group if o.detected_s is not None]),
            mean_ttl_s=_mean([o.located_s for o in group if o.located_s is not None]),
            mean_ttr_s=_mean([o.repaired_s for o in group if o.repaired_s is not None]),
        )
        for name, group in sorted(members.items())
    ]


def by_category(outcomes: Sequence[FaultOutcome]) -> list[Group]:
    return group_outcomes(outcomes, lambda o: o.category)


def by_mechanism(outcomes: Sequence[FaultOutcome]) -> list[Group]:
    return group_outcomes(outcomes, lambda o: o.mechanism)


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def to_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """RFC 4180 CSV with ``\\n`` line ends; None is an empty cell (no side effects)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if cell is None else cell for cell in row])
    return buffer.getvalue()


FAULT_COLUMNS = (
    "fault_id",
    "catalog_id",
    "category",
    "mechanism",
    "inject_s",
    "revert_s",
    "incident_id",
    "a",
    "b",
    "b_strict",
    "c",
    "outcome",
    "ttd_s",
    "ttl_s",
    "ttr_s",
)


def faults_csv(outcomes: Sequence[FaultOutcome]) -> str:
    """One row per scored fault, in injection order."""
    rows = [
        [
            o.fault_id,
            o.catalog_id,
            o.category,
            o.mechanism,
            _cell(o.inject_s),
            _cell(o.revert_s),
            o.incident_id,
            o.a,
            o.b,
            o.b_strict,
            o.c,
            o.outcome,
            _cell(o.detected_s),
            _cell(o.located_s),
            _cell(o.repaired_s),
        ]
        for o in outcomes
    ]
    return to_csv(FAULT_COLUMNS, rows)


def groups_csv(kind: str, groups: Sequence[Group]) -> str:
    header = (kind, "faults", "correlated", "located", "repaired", "mean_ttd_s", "mean_ttl_s", "mean_ttr_s")
    rows = [
        [g.name, g.faults, g.correlated, g.located, g.repaired]
        + [_cell(g.mean_ttd_s), _cell(g.mean_ttl_s), _cell(g.mean_ttr_s)]
        for g in groups
    ]
    return to_csv(header, rows)
