"""The human-readable scorecard: a summary table and a per-fault table, rendered with rich."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from orchestrator.score.scorecard import Median, Scorecard

DASH = "-"
UNKNOWN = "unknown (no service snapshots)"


def fmt(value: float | None, digits: int = 3) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def fmt_median(value: Median) -> str:
    """A median with its count in brackets, or a dash when no fault reached the stage."""
    return DASH if value.median is None else f"{value.median:.1f} s [{value.n}]"


def fmt_resolved(card: Scorecard) -> str:
    """The resolved count with its share of the faults, or ``unknown`` when collateral is."""
    if card.resolved is None or card.resolved_share is None:
        return UNKNOWN
    return f"{card.resolved} of {card.faults} ({card.resolved_share:.3f})"


def fmt_flag(value: int | None) -> str:
    return DASH if value is None else str(value)


def summary_rows(card: Scorecard) -> list[tuple[str, str]]:
    level = DASH if card.degradation_level is None else f"{card.degradation_level:.1f} %"
    return [
        ("Marathon-Score", f"{card.marathon_score:.1f}"),
        ("Corr", fmt(card.corr)),
        ("Loc", fmt(card.loc)),
        ("Loc-strict", fmt(card.loc_strict)),
        ("Rep", fmt(card.rep)),
        ("Risk", fmt(card.risk)),
        ("Degradation level", level),
        ("MTTD", fmt_median(card.mttd_s)),
        ("MTTL", fmt_median(card.mttl_s)),
        ("MTTR", fmt_median(card.mttr_s)),
        ("Faults", str(card.faults)),
        ("Interventions (out of scope)", f"{card.interventions} ({card.interventions_out_of_scope})"),
        ("Forbidden attempts", str(card.forbidden_attempts)),
        ("Ambiguity share", fmt(card.ambiguity_share)),
        ("Resolved", fmt_resolved(card)),
        ("Collateral", UNKNOWN if card.collateral is None else str(len(card.collateral))),
        ("Model calls", str(card.model_calls)),
        ("Tokens in / out", f"{card.tokens_in} / {card.tokens_out}"),
        ("Cost", f"${card.cost_usd:.3f}"),
        ("Agent sandbox", "bwrap" if card.sandboxed else "NONE (--unsandboxed): not comparable"),
    ]


def render_text(card: Scorecard, *, title: str, width: int = 110) -> str:
    """Both tables as plain text (no colour codes), the same for the same scorecard."""
    summary = Table(title=title, show_header=False)
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    for name, value in summary_rows(card):
        summary.add_row(name, value)
    faults = Table(title="Faults")
    for column in ("fault", "catalog id", "category", "mechanism", "a", "b", "c", "resolved", "outcome"):
        faults.add_column(column)
    for o in card.outcomes:
        faults.add_row(
            o.fault_id, o.catalog_id, o.category, o.mechanism, str(o.a), str(o.b), str(o.c),
            fmt_flag(o.resolved), o.outcome,
        )  # fmt: skip
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(summary)
    console.print(faults)
    return buffer.getvalue()
