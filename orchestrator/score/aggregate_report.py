"""The seed-aggregate report: one app and one agent over several seeds, as self-contained HTML and CSV
(mean and 95 % confidence interval of every figure, each seed's result, each fault kind's consistency).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from orchestrator import __version__
from orchestrator.bundle.reader import Bundle
from orchestrator.errors import ConfigError, Problem
from orchestrator.score.aggregate import (
    CONFIDENCE,
    FigureSummary,
    as_interval,
    consistency,
    summarise,
)
from orchestrator.score.breakdown import to_csv
from orchestrator.score.charts import interval_svg
from orchestrator.score.provenance import Provenance
from orchestrator.score.report import STYLE
from orchestrator.score.scorecard import Scorecard
from orchestrator.score.table import DASH


@dataclass(frozen=True)
class SeedRun:
    """One scored bundle, with the baseline it was scored against and its provenance."""

    bundle: Bundle
    baseline: Bundle | None
    card: Scorecard
    provenance: Provenance


def check_same_setup(bundles: Sequence[Bundle]) -> None:
    """``ConfigError`` naming the first bundle whose app or agent differs from the first bundle's."""
    first = bundles[0].manifest
    for bundle in bundles[1:]:
        for field in ("app", "agent_name"):
            ours, theirs = getattr(first, field), getattr(bundle.manifest, field)
            if ours != theirs:
                raise ConfigError(
                    "an aggregate report is of one app and one agent over seeds",
                    [
                        Problem(
                            str(bundle.path),
                            None,
                            f"run_manifest.{field}",
                            repr(theirs),
                            f"{bundles[0].path} has {ours!r}",
                        )
                    ],
                )


def _number(value: float | None, digits: int = 3) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def figures_csv(summaries: Sequence[FigureSummary]) -> str:
    rows = [
        [s.label, s.estimate.n, _number(s.estimate.mean), _number(s.estimate.sd)]
        + [_number(s.estimate.low), _number(s.estimate.high)]
        for s in summaries
    ]
    return to_csv(("figure", "n", "mean", "sd", "ci95_low", "ci95_high"), rows)


def _seed_row(run: SeedRun) -> list[str]:
    c, p = run.card, run.provenance
    return [
        str(p.seed),
        p.run_id,
        p.end,
        "yes" if p.verified else "NO",
        f"{c.marathon_score:.1f}",
        _number(c.corr),
        _number(c.loc),
        _number(c.loc_strict),
        _number(c.rep),
        _number(c.risk),
        _number(c.degradation_level, 1),
        _number(c.mttd_s.median, 1),
        _number(c.mttr_s.median, 1),
        str(c.faults),
        p.bundle_sha256,
    ]


SEED_COLUMNS = (
    "seed",
    "run_id",
    "end",
    "verified",
    "marathon_score",
    "corr",
    "loc",
    "loc_strict",
    "rep",
    "risk",
    "degradation_level",
    "mttd_s",
    "mttr_s",
    "faults",
    "bundle_sha256",
)


def seeds_csv(runs: Sequence[SeedRun]) -> str:
    return to_csv(SEED_COLUMNS, [["" if v == DASH else v for v in _seed_row(r)] for r in runs])


def kinds_csv(cards: Sequence[Scorecard]) -> str:
    rows = [
        [k.catalog_id, k.category, k.mechanism, k.injections, k.seeds, k.resolved, f"{k.share:.3f}"]
        for k in consistency(cards)
    ]
    header = ("catalog_id", "category", "mechanism", "injections", "seeds", "seeds_resolved", "share")
    return to_csv(header, rows)


def aggregate_charts(runs: Sequence[SeedRun]) -> dict[str, str]:
    """The aggregate's charts as standalone SVG documents, by name (no side effects)."""
    summaries = {s.label: s for s in summarise([r.card for r in runs])}
    fractions = [as_interval(summaries[label]) for label in ("Corr", "Loc", "Loc-strict", "Rep", "Risk")]
    percents = [as_interval(summaries[label]) for label in ("Marathon-Score", "Degradation level %")]
    top = max([100.0, *(v for i in percents for v in i.values), *(i.high or 0.0 for i in percents)])
    return {
        "components": interval_svg(fractions, scale=1.0, name="components"),
        "scores": interval_svg(percents, scale=top, name="scores"),
    }


def _table(css: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join(
        f'<tr class="{css}-row">' + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f'<table class="{css}">{head}{body}</table>'


def _warnings(runs: Sequence[SeedRun]) -> str:
    said: list[str] = []
    for run in runs:
        p = run.provenance
        if not p.complete:
            said.append(f"Seed {p.seed} ({p.run_id}) did not complete ({p.end}): not comparable.")
        if p.no_verify or not p.verified:
            said.append(f"Seed {p.seed} ({p.run_id}): {p.stated_integrity}.")
        if not p.sandboxed:
            said.append(f"Seed {p.seed} ({p.run_id}): the agent ran without its sandbox.")
    for field in ("rule_pack", "catalog", "code", "delta_s", "budget_s"):
        values = {str(getattr(r.provenance, field)) for r in runs}
        if len(values) > 1:
            said.append(f"The runs differ in {field.replace('_', ' ')}: {', '.join(sorted(values))}.")
    return "".join(f'<p class="warning">{escape(line)}</p>' for line in said)


def render_aggregate(runs: Sequence[SeedRun]) -> str:
    """The aggregate report as one HTML string, the same for the same inputs (no side effects)."""
    check_same_setup([r.bundle for r in runs])
    first = runs[0].provenance
    cards = [r.card for r in runs]
    summaries = summarise(cards)
    charts = aggregate_charts(runs)
    seeds = ", ".join(str(r.provenance.seed) for r in runs)
    title = f"Marathon over {len(runs)} seeds: {first.agent} on {first.app}"
    origin = [
        ("App / agent", f"{first.app} / {first.agent}"),
        ("Seeds", seeds),
        ("Marathon version (runs)", first.code),
        ("Marathon version (report)", __version__),
        ("Rule pack", first.rule_pack),
        ("Catalog", first.catalog),
        ("Delta / budget", f"{first.delta_s:g} s / {first.budget_s:g} s"),
        ("Interval", f"{CONFIDENCE:.0%} confidence, Student t with n - 1 degrees of freedom"),
    ]
    figure_rows = [
        [s.label, str(s.estimate.n), _number(s.estimate.mean), _number(s.estimate.sd)]
        + [_number(s.estimate.low), _number(s.estimate.high)]
        for s in summaries
    ]
    kind_rows = [
        [k.catalog_id, k.category, k.mechanism, str(k.injections), f"{k.resolved} of {k.seeds}"]
        + [f"{k.share:.2f}"]
        for k in consistency(cards)
    ]
    seed_header = ["seed", "run", "end", "verified", "score", "Corr", "Loc", "Loc-strict", "Rep", "Risk"]
    seed_header += ["degradation %", "MTTD s", "MTTR s", "faults", "bundle SHA-256"]
    return "".join(
        [
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            _warnings(runs),
            _table("provenance", (), origin),
            "<h2>Figures over seeds</h2>",
            "<p>Mean, sample standard deviation and 95 % confidence interval of the mean; n counts the seeds "
            "that have the figure (Risk, the degradation level and MTTx can be missing).</p>",
            _table("figures", ("figure", "n", "mean", "sd", "95 % CI low", "95 % CI high"), figure_rows),
            "<h2>Scores (dots: seeds; bar: mean; red: 95 % confidence interval)</h2>",
            charts["scores"],
            charts["components"],
            "<h2>Consistency per fault kind</h2>",
            "<p>A kind is resolved in a seed when every injection of it there was handled end to end "
            "(correlated, located and repaired: a = b = c = 1).</p>",
            _table(
                "kinds",
                ("catalog id", "category", "mechanism", "injections", "resolved in seeds", "share"),
                kind_rows,
            ),
            "<h2>Seeds</h2>",
            _table("seeds", seed_header, [_seed_row(r) for r in runs]),
            "</body></html>\n",
        ]
    )
