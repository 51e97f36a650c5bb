"""The self-contained HTML report of one run: where it comes from (provenance), timeline, concurrency,
degradation, stages, the distribution of detect/locate/repair times, faults by category and mechanism, the
per-fault table, and the health of the rule pack's evaluation.

One file, inline SVG and CSS only: it opens offline and never fetches anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import RuleFailed, ServiceSample
from orchestrator.score.attribution import latest_alerts, run_end
from orchestrator.score.breakdown import Group, by_category, by_mechanism
from orchestrator.score.charts import (
    AGENT_COLOUR,
    BASELINE_COLOUR,
    OUTCOME_COLOURS,
    Bar,
    Mark,
    distribution_svg,
    line_chart_svg,
    stage_bars_svg,
    timeline_svg,
)
from orchestrator.score.provenance import Provenance, gather_provenance
from orchestrator.score.scorecard import FaultOutcome, Scorecard
from orchestrator.score.table import DASH, UNKNOWN, fmt, fmt_flag, summary_rows

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border: 1px solid #ccc; padding: 3px 6px; text-align: left; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
.warning { background: #fde0dd; border: 2px solid #a50f15; padding: 8px; font-weight: bold; }
table.provenance th { width: 200px; } table.provenance td { font-family: monospace; }
"""


def concurrency_points(intervals: Sequence[tuple[float, float]], t_end: float) -> list[tuple[float, float]]:
    """(t, number of live faults from t on) at every change, from 0 to ``t_end`` (no side effects)."""
    changes: dict[float, int] = {0.0: 0, t_end: 0}
    for start, end in intervals:
        changes[start] = changes.get(start, 0) + 1
        changes[end] = changes.get(end, 0) - 1
    points, live = [], 0
    for t in sorted(changes):
        live += changes[t]
        points.append((t, float(live)))
    return points


def concurrency_summary(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Time-weighted mean and peak of a step series (no side effects)."""
    span = points[-1][0] - points[0][0] if points else 0.0
    area = sum((t1 - t0) * value for (t0, value), (t1, _) in zip(points, points[1:], strict=False))
    peak = max((value for _, value in points), default=0.0)
    return (area / span if span > 0 else 0.0), peak


def degradation_points(samples: Sequence[ServiceSample]) -> list[tuple[float, float]]:
    by_time = {s.t: min(1.0, s.e + s.l) * s.q for s in samples}
    return sorted(by_time.items())


def _seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:.0f}"


def _fault_rows(outcomes: Sequence[FaultOutcome]) -> str:
    head = (
        "<tr><th>fault</th><th>catalog id</th><th>category</th><th>mechanism</th><th>inject s</th>"
        "<th>revert s</th><th>incident</th><th>a</th><th>b</th><th>b strict</th><th>c</th><th>resolved</th>"
        "<th>outcome</th>"
        "<th>TTD s</th><th>TTL s</th><th>TTR s</th></tr>"
    )
    rows = [head]
    for o in outcomes:
        cells = [
            o.fault_id,
            o.catalog_id,
            o.category,
            o.mechanism,
            f"{o.inject_s:.0f}",
            f"{o.revert_s:.0f}",
            o.incident_id or DASH,
            str(o.a),
            str(o.b),
            str(o.b_strict),
            str(o.c),
            fmt_flag(o.resolved),
            o.outcome,
            _seconds(o.detected_s),
            _seconds(o.located_s),
            _seconds(o.repaired_s),
        ]
        colour = OUTCOME_COLOURS[o.outcome]
        rows.append(
            f'<tr class="fault-row" style="border-left: 6px solid {colour}">'
            + "".join(f"<td>{escape(cell)}</td>" for cell in cells)
            + "</tr>"
        )
    return '<table class="faults">' + "".join(rows) + "</table>"


def collateral_html(card: Scorecard) -> str:
    """The "Collateral" section's body: each difference the agent left outside every fault's scope, with
    the incidents its interventions referenced (no side effects)."""
    if card.collateral is None:
        return f'<p class="collateral">Collateral {escape(UNKNOWN)}: the bundle predates them.</p>'
    if not card.collateral:
        return (
            '<p class="collateral">No workload outside every fault\'s scope that the agent touched differs '
            "between the run's start and its end.</p>"
        )
    rows = ["<tr><th>workload</th><th>field</th><th>at start</th><th>at end</th><th>incidents</th></tr>"]
    for d in card.collateral:
        cells = [d.workload, d.field, d.start, d.end, ", ".join(d.incidents) or DASH]
        rows.append('<tr class="difference">' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="collateral">{"".join(rows)}</table>'


def rule_health_html(bundle: Bundle) -> str:
    """The "Rule health" section's body: whether every rule could be evaluated, and for each rule that could
    not, how often and why (no side effects). A rule that failed may have missed alerts it should fire."""
    first: dict[str, RuleFailed] = {}
    failed: dict[str, int] = {}
    for failure in bundle.rule_failures:
        first.setdefault(failure.rule, failure)
        failed[failure.rule] = failed.get(failure.rule, 0) + 1
    summary = {health.rule: health for health in bundle.rule_health}
    if summary:
        windows = sum(health.evaluations for health in summary.values())
        rules = f"{len(summary)} rule" + ("" if len(summary) == 1 else "s")
        lead = f"{rules} evaluated over {windows} windows; "
    elif failed:
        lead = "the run ended without its summary; "
    else:
        return "<p>No rule health recorded: the run ended before its summary, or predates it.</p>"
    if not failed:
        return f'<p class="rule-health">{escape(lead)}none failed.</p>'
    rows = ["<tr><th>rule</th><th>group</th><th>failed windows</th><th>first failure</th></tr>"]
    for name in sorted(failed):
        of = f" of {summary[name].evaluations}" if name in summary else ""
        one = first[name]
        cells = [name, one.group, f"{failed[name]}{of}", f"t={one.t:.0f} s: {one.error}"]
        rows.append('<tr class="rule-failed">' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    said = f"{len(failed)} failed: alerts they should have fired may be missing."
    return f'<p class="rule-health">{escape(lead + said)}</p><table class="rules">{"".join(rows)}</table>'


def _breakdown_html(kind: str, groups: Sequence[Group]) -> str:
    head = (
        f"<tr><th>{escape(kind)}</th><th>faults</th><th>correlated</th><th>located</th><th>repaired</th>"
        "<th>mean TTD s</th><th>mean TTL s</th><th>mean TTR s</th></tr>"
    )
    rows = [head]
    for g in groups:
        cells = [g.name, str(g.faults), str(g.correlated), str(g.located), str(g.repaired)]
        cells += [_seconds(g.mean_ttd_s), _seconds(g.mean_ttl_s), _seconds(g.mean_ttr_s)]
        rows.append('<tr class="group-row">' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="breakdown {escape(kind)}">' + "".join(rows) + "</table>"


def _warnings(provenance: Provenance) -> str:
    said: list[str] = []
    if not provenance.complete:
        said.append(
            f"This run did not complete ({provenance.end}): its figures cover only part of its schedule and "
            "are not comparable with complete runs."
        )
    if provenance.no_verify or not provenance.verified:
        said.append(f"Integrity: {provenance.stated_integrity}.")
    if not provenance.sandboxed:
        said.append("The agent ran without its sandbox (--unsandboxed): it could read the ground truth.")
    return "".join(f'<p class="warning">{escape(line)}</p>' for line in said)


def report_charts(bundle: Bundle, baseline: Bundle | None, card: Scorecard) -> dict[str, str]:
    """Every chart of the report as a standalone SVG document, by name, in page order (no side effects)."""
    t_end = max(run_end(bundle), run_end(baseline) if baseline is not None else 0.0, 1.0)
    alerts = latest_alerts(bundle.alerts)
    bars = [
        Bar(
            label=o.fault_id,
            start=o.inject_s,
            end=o.revert_s,
            outcome=o.outcome,
            alerts=tuple(sorted(alerts[alert_id].starts_at for alert_id in o.alert_ids)),
            tooltip=f"{o.fault_id} {o.catalog_id} ({o.category}, {o.mechanism}): {o.outcome}",
            caption=f"{o.fault_id} {o.catalog_id}",
        )
        for o in card.outcomes
    ]
    marks = [Mark(a.starts_at, "alert", f"{a.alert_id} {a.rule}") for a in alerts.values()]
    marks += [
        Mark(i.t, "action", f"{i.tool} {', '.join(i.targets)} -> {i.result}") for i in bundle.interventions
    ]
    marks += [Mark(f.t, "forbidden", f"forbidden {f.tool}: {f.reason}") for f in bundle.forbidden]
    concurrency = concurrency_points([(o.inject_s, o.revert_s) for o in card.outcomes], t_end)
    series = [("agent", AGENT_COLOUR, degradation_points(bundle.service))]
    if baseline is not None:
        series.append(("no-action", BASELINE_COLOUR, degradation_points(baseline.service)))
    stages = [
        ("Corr", card.corr),
        ("Loc", card.loc),
        ("Loc-strict", card.loc_strict),
        ("Rep", card.rep),
        ("Score / 100", card.marathon_score / 100),
        ("Risk", card.risk),
    ]
    times = [
        ("TTD", [o.detected_s for o in card.outcomes if o.detected_s is not None]),
        ("TTL", [o.located_s for o in card.outcomes if o.located_s is not None]),
        ("TTR", [o.repaired_s for o in card.outcomes if o.repaired_s is not None]),
    ]
    return {
        "timeline": timeline_svg(bars, marks, t_end),
        "concurrency": line_chart_svg(
            [("live-faults", AGENT_COLOUR, concurrency)],
            t_end=t_end,
            name="concurrency",
            y_label="live faults",
            step=True,
        ),
        "degradation": line_chart_svg(series, t_end=t_end, name="degradation", y_label="degraded req/s"),
        "stages": stage_bars_svg(stages),
        "mttx": distribution_svg(times),
    }


def render_report(
    bundle: Bundle, baseline: Bundle | None, card: Scorecard, *, provenance: Provenance | None = None
) -> str:
    """The report as one HTML string, the same for the same inputs. Without ``provenance`` it is gathered
    from the bundle's files (which verifies the bundle); otherwise no side effects."""
    if provenance is None:
        provenance = gather_provenance(bundle, baseline)
    manifest = bundle.manifest
    t_end = max(run_end(bundle), run_end(baseline) if baseline is not None else 0.0, 1.0)
    charts = report_charts(bundle, baseline, card)
    mean, peak = concurrency_summary(
        concurrency_points([(o.inject_s, o.revert_s) for o in card.outcomes], t_end)
    )
    legend = "".join(
        f'<span><i class="swatch" style="background:{colour}"></i>{escape(name)}</span>'
        for name, colour in OUTCOME_COLOURS.items()
    )
    summary = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in summary_rows(card))
    origin = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in provenance.rows())
    title = f"Marathon {manifest.run_id}: {manifest.agent_name} on {manifest.app} (seed {manifest.seed})"
    level = DASH if card.degradation_level is None else f"{card.degradation_level:.1f} %"
    return "".join(
        [
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            _warnings(provenance),
            f'<table class="provenance">{origin}</table>',
            "<h2>Scores</h2>",
            f'<table class="summary">{summary}</table>',
            "<h2>Fault timeline</h2>",
            f'<div class="legend">{legend}</div>',
            charts["timeline"],
            "<h2>Live faults over time</h2>",
            f"<p>mean {mean:.2f}, peak {peak:.0f} simultaneously live faults</p>",
            charts["concurrency"],
            "<h2>Entry-point degradation</h2>",
            f"<p>min(1, e + l) &#183; q over time; degradation level {escape(level)}"
            f" (D = {fmt(card.degradation)})</p>",
            charts["degradation"],
            "<h2>Stage scores</h2>",
            charts["stages"],
            "<h2>Time to detect, locate and repair</h2>",
            "<p>Each fault that reached the stage, seconds after its injection; boxes span the quartiles, "
            "the thick line is the median (the MTTx of docs/metrics.md), whiskers reach the extremes.</p>",
            charts["mttx"],
            "<h2>Faults by category</h2>",
            _breakdown_html("category", by_category(card.outcomes)),
            "<h2>Faults by mechanism</h2>",
            _breakdown_html("mechanism", by_mechanism(card.outcomes)),
            "<h2>Faults</h2>",
            _fault_rows(card.outcomes),
            "<h2>Collateral</h2>",
            collateral_html(card),
            "<h2>Rule health</h2>",
            rule_health_html(bundle),
            "</body></html>\n",
        ]
    )
