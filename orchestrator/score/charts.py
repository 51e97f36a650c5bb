"""Inline SVG charts for the HTML report: plain strings, no scripts, no external resources (pure)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

OUTCOME_COLOURS: dict[str, str] = {
    "missed": "#d62728",
    "correlated_only": "#ff7f0e",
    "located_without_repair": "#e6c619",
    "acted_on_without_repair": "#9467bd",
    "handled_end_to_end": "#2ca02c",
}
AGENT_COLOUR = "#1f77b4"
BASELINE_COLOUR = "#7f7f7f"
WIDTH = 960
LEFT = 90
RIGHT = 20


@dataclass(frozen=True)
class Bar:
    """One fault on the timeline, with the alert starts attributable to it."""

    label: str
    start: float
    end: float
    outcome: str
    alerts: tuple[float, ...]
    tooltip: str
    caption: str = ""  # the text beside the bar, when it says more than the label (the catalog id)


@dataclass(frozen=True)
class Mark:
    t: float
    kind: str  # "alert", "action" or "forbidden"
    tooltip: str


def _x(t: float, t_end: float, left: float = LEFT) -> float:
    return left + (WIDTH - left - RIGHT) * (t / t_end if t_end > 0 else 0.0)


def _axis(t_end: float, y: float, left: float = LEFT) -> str:
    step = _tick_step(t_end)
    parts = [f'<line class="axis" x1="{left}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#444"/>']
    tick = 0.0
    while tick <= t_end + 1e-9:
        x = _x(tick, t_end, left)
        parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#444"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{y + 16}" font-size="10" text-anchor="middle">{tick / 60:g} min</text>'
        )
        tick += step
    return "".join(parts)


def _tick_step(t_end: float) -> float:
    for minutes in (1, 2, 5, 10, 15, 30, 60, 120):
        if t_end / (minutes * 60) <= 12:
            return minutes * 60.0
    return max(t_end / 10, 1.0)


def timeline_svg(bars: Sequence[Bar], marks: Sequence[Mark], t_end: float) -> str:
    """A bar per fault coloured by outcome, its alert starts as ticks, and rows of all alerts and actions.

    The label column is as wide as the longest caption needs (about 6 px a character at 11 px)."""
    row = 16
    left = min(max(float(LEFT), 10 + 6.2 * max((len(b.caption or b.label) for b in bars), default=0)), 420.0)
    top = 2 * row + 10
    height = top + row * len(bars) + 30
    parts = [
        f'<svg class="chart timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">'
    ]
    for index, (name, kinds) in enumerate((("alerts", ("alert",)), ("actions", ("action", "forbidden")))):
        y = 4 + index * row
        parts.append(f'<text x="4" y="{y + 11}" font-size="11">{name}</text>')
        for mark in (m for m in marks if m.kind in kinds):
            x = _x(mark.t, t_end, left)
            colour = {"alert": "#555", "action": AGENT_COLOUR, "forbidden": "#000"}[mark.kind]
            # Alerts are thin ticks (there are many); actions are wider blocks.
            mark_x, width, top_y, tall = (
                (x - 0.75, 1.5, y + 1, 12) if mark.kind == "alert" else (x - 3, 6.0, y + 2, 10)
            )
            shape = (
                f'<rect class="{mark.kind}-mark" x="{mark_x:.1f}" y="{top_y}" width="{width}" '
                f'height="{tall}" fill="{colour}">'
            )
            parts.append(f"{shape}<title>{escape(mark.tooltip)}</title></rect>")
    for index, bar in enumerate(bars):
        y = top + index * row
        x0, x1 = _x(bar.start, t_end, left), _x(bar.end, t_end, left)
        parts.append(f'<text x="4" y="{y + 11}" font-size="11">{escape(bar.caption or bar.label)}</text>')
        parts.append(
            f'<rect class="fault-bar outcome-{bar.outcome}" data-fault="{escape(bar.label)}" x="{x0:.1f}" '
            f'y="{y + 2}" width="{max(x1 - x0, 1.0):.1f}" height="12" fill="{OUTCOME_COLOURS[bar.outcome]}">'
            f"<title>{escape(bar.tooltip)}</title></rect>"
        )
        for t in bar.alerts:
            x = _x(t, t_end, left)
            parts.append(
                f'<line class="fault-alert" x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" y2="{y + 15}" '
                'stroke="#222"/>'
            )
    parts.append(_axis(t_end, top + row * len(bars) + 6, left))
    parts.append("</svg>")
    return "".join(parts)


def line_chart_svg(
    series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]],
    *,
    t_end: float,
    name: str,
    y_label: str,
    step: bool = False,
) -> str:
    """One polyline per (class, colour, points) series over a shared time axis, with a legend."""
    height, top, bottom = 220, 20, 180
    y_max = max((y for _, _, points in series for _, y in points), default=0.0) or 1.0

    def y_of(value: float) -> float:
        return bottom - (bottom - top) * value / y_max

    parts = [
        f'<svg class="chart {name}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">'
    ]
    parts.append(f'<text x="4" y="{top + 4}" font-size="10">{y_max:.3g}</text>')
    parts.append(f'<text x="4" y="{bottom}" font-size="10">0</text>')
    parts.append(f'<text x="4" y="{(top + bottom) / 2}" font-size="11">{escape(y_label)}</text>')
    for index, (css, colour, points) in enumerate(series):
        coords: list[str] = []
        previous: float | None = None
        for t, value in points:
            if step and previous is not None:
                coords.append(f"{_x(t, t_end):.1f},{y_of(previous):.1f}")
            coords.append(f"{_x(t, t_end):.1f},{y_of(value):.1f}")
            previous = value
        parts.append(
            f'<polyline class="series {css}" data-points="{len(points)}" points="{" ".join(coords)}" '
            f'fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        legend_x = WIDTH - RIGHT - 160 * (index + 1)
        parts.append(f'<rect x="{legend_x}" y="2" width="12" height="4" fill="{colour}"/>')
        parts.append(f'<text x="{legend_x + 16}" y="8" font-size="10">{escape(css)}</text>')
    parts.append(_axis(t_end, bottom + 4))
    parts.append("</svg>")
    return "".join(parts)


def stage_bars_svg(values: Sequence[tuple[str, float | None]]) -> str:
    """Horizontal bars for fractions in [0, 1]; a missing value is drawn as a dash."""
    row = 24
    height = row * len(values) + 10
    span = WIDTH - 2 * LEFT - 200
    parts = [
        f'<svg class="chart stages" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">'
    ]
    for index, (label, value) in enumerate(values):
        y = 4 + index * row
        parts.append(f'<text x="4" y="{y + 14}" font-size="12">{escape(label)}</text>')
        parts.append(f'<rect x="{LEFT + 60}" y="{y + 2}" width="{span}" height="16" fill="#eee"/>')
        if value is not None:
            parts.append(
                f'<rect class="stage-bar" data-value="{value:.3f}" x="{LEFT + 60}" y="{y + 2}" '
                f'width="{span * min(max(value, 0.0), 1.0):.1f}" height="16" fill="{AGENT_COLOUR}"/>'
            )
        text = "-" if value is None else f"{value:.3f}"
        parts.append(f'<text x="{LEFT + 70 + span}" y="{y + 14}" font-size="12">{text}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_open(name: str, height: float) -> str:
    return f'<svg class="chart {name}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">'


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Lower quartile, median and upper quartile, interpolated linearly between order statistics."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0], ordered[0], ordered[0]
    lower, middle, upper = statistics.quantiles(ordered, n=4, method="inclusive")
    return lower, middle, upper


def distribution_svg(rows: Sequence[tuple[str, Sequence[float]]], *, name: str = "mttx") -> str:
    """A horizontal box plot per row (quartiles, median, whiskers from min to max) with every value drawn
    as a dot over it, on one time axis; a row without values says so."""
    row, top = 40, 10
    t_end = max((v for _, values in rows for v in values), default=0.0) or 60.0
    height = top + row * len(rows) + 30
    parts = [_svg_open(name, height)]
    for index, (label, values) in enumerate(rows):
        y = top + index * row
        middle = y + row / 2
        parts.append(f'<text x="4" y="{middle + 4}" font-size="12">{escape(label)} [{len(values)}]</text>')
        if not values:
            none = "no fault reached this stage"
            parts.append(f'<text x="{LEFT}" y="{middle + 4}" font-size="11">{none}</text>')
            continue
        low, median, high = quartiles(values)
        x_min, x_max = _x(min(values), t_end), _x(max(values), t_end)
        x_low, x_med, x_high = _x(low, t_end), _x(median, t_end), _x(high, t_end)
        parts.append(
            f'<line class="{name}-whisker" x1="{x_min:.1f}" y1="{middle}" x2="{x_max:.1f}" y2="{middle}" '
            'stroke="#444"/>'
        )
        parts.append(
            f'<rect class="{name}-box" x="{x_low:.1f}" y="{y + 8}" width="{max(x_high - x_low, 2.0):.1f}" '
            f'height="{row - 16}" fill="#c6dbef" stroke="{AGENT_COLOUR}">'
            f"<title>{escape(label)}: quartiles {low:.0f} / {median:.0f} / {high:.0f} s</title></rect>"
        )
        parts.append(
            f'<line class="{name}-median" x1="{x_med:.1f}" y1="{y + 8}" x2="{x_med:.1f}" y2="{y + row - 8}" '
            f'stroke="{AGENT_COLOUR}" stroke-width="3"/>'
        )
        for number, value in enumerate(values):
            jitter = ((number * 7) % 5 - 2) * 2.5  # spread equal values apart, the same on every render
            parts.append(
                f'<circle class="{name}-point" cx="{_x(value, t_end):.1f}" cy="{middle + jitter:.1f}" r="3" '
                f'fill="#222"><title>{value:.0f} s</title></circle>'
            )
    parts.append(_axis(t_end, top + row * len(rows) + 4))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Interval:
    """One figure over seeds: every seed's value, their mean and its confidence interval."""

    label: str
    values: tuple[float, ...]
    mean: float | None
    low: float | None
    high: float | None


def interval_svg(rows: Sequence[Interval], *, scale: float, name: str) -> str:
    """Per figure, each seed's value as a dot, the mean as a bar and its confidence interval as a whisker,
    on a shared scale from 0 to ``scale``."""
    row = 28
    height = row * len(rows) + 10
    span = WIDTH - 2 * LEFT - 200

    def x_of(value: float) -> float:
        return LEFT + 60 + span * min(max(value / scale, 0.0), 1.0)

    parts = [_svg_open(name, height)]
    for index, figure in enumerate(rows):
        y = 4 + index * row
        middle = y + 11
        parts.append(f'<text x="4" y="{y + 15}" font-size="12">{escape(figure.label)}</text>')
        parts.append(f'<rect x="{LEFT + 60}" y="{y + 2}" width="{span}" height="18" fill="#eee"/>')
        if figure.mean is not None:
            parts.append(
                f'<rect class="interval-mean" data-value="{figure.mean:.3f}" x="{LEFT + 60}" y="{y + 6}" '
                f'width="{x_of(figure.mean) - LEFT - 60:.1f}" height="10" fill="{AGENT_COLOUR}"/>'
            )
        if figure.low is not None and figure.high is not None:
            x0, x1 = x_of(figure.low), x_of(figure.high)
            parts.append(
                f'<line class="interval-ci" x1="{x0:.1f}" y1="{middle}" x2="{x1:.1f}" y2="{middle}" '
                'stroke="#d62728" stroke-width="2"/>'
            )
            for x in (x0, x1):
                parts.append(f'<line x1="{x:.1f}" y1="{y + 4}" x2="{x:.1f}" y2="{y + 18}" stroke="#d62728"/>')
        for value in figure.values:
            parts.append(
                f'<circle class="interval-point" cx="{x_of(value):.1f}" cy="{middle}" r="3" fill="#222"/>'
            )
        said = "-" if figure.mean is None else f"{figure.mean:.3g}"
        if figure.low is not None and figure.high is not None:
            said += f" [{figure.low:.3g}, {figure.high:.3g}]"
        parts.append(f'<text x="{LEFT + 70 + span}" y="{y + 15}" font-size="12">{escape(said)}</text>')
    parts.append("</svg>")
    return "".join(parts)
