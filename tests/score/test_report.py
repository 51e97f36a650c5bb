"""The HTML report: self-contained, and its charts are really drawn by a browser (headless Chromium)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import Record, RuleFailed, RuleHealth, ServiceSample
from orchestrator.score.charts import AGENT_COLOUR, BASELINE_COLOUR, OUTCOME_COLOURS
from orchestrator.score.report import concurrency_points, concurrency_summary, render_report, rule_health_html
from orchestrator.score.scorecard import score_bundle, scorecard_json
from tests.bundle.commandline import run_command
from tests.score.scenario import act, alert, build, fault, probes, report

RIGHT = {"culprits": ["cartservice"], "artifact": "config:cartservice/env/REDIS_ADDR"}


def _records() -> list[Record]:
    records: list[Record] = [
        # f1 handled end to end; f2 located only; f3 correlated only; f4 acted on; f5 missed.
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60, service="cartservice"),
        report(120, "INC-1", ["a1"], **RIGHT),
        act(130, "cartservice"),
        *probes("f1", [(120, False), (240, True), (360, True)]),
        *fault("f2", inject=300, revert=900),
        alert("a2", start=330, service="cartservice"),
        report(400, "INC-2", ["a2"], **RIGHT),
        *fault("f3", inject=500, revert=1100),
        alert("a3", start=560, service="frontend"),
        report(600, "INC-3", ["a3"]),
        *fault("f4", inject=700, revert=1300, culprits=["paymentservice"], scope=["paymentservice"]),
        alert("a4", start=720, service="paymentservice"),
        report(760, "INC-4", ["a4"]),
        act(800, "paymentservice", incident="INC-4"),
        *fault("f5", inject=900, revert=1500),
    ]
    records += [ServiceSample(t=60.0 * n, q=20.0, e=0.1 if 5 <= n <= 20 else 0.0, l=0.05) for n in range(31)]
    return records


def _run(tmp_path: Path) -> tuple[Bundle, Bundle]:
    agent = build(tmp_path, _records(), name="agent")
    noop = build(
        tmp_path,
        [ServiceSample(t=60.0 * n, q=20.0, e=0.3 if 5 <= n <= 25 else 0.0, l=0.05) for n in range(31)],
        name="noop",
    )
    return agent, noop


def test_the_scenario_covers_every_outcome(tmp_path: Path) -> None:
    agent, noop = _run(tmp_path)
    outcomes = [o.outcome for o in score_bundle(agent, noop).outcomes]
    assert outcomes == [
        "handled_end_to_end",
        "located_without_repair",
        "correlated_only",
        "acted_on_without_repair",
        "missed",
    ]


def test_concurrency_is_a_step_series_with_its_mean_and_peak() -> None:
    points = concurrency_points([(0.0, 600.0), (300.0, 900.0)], 1200.0)
    assert points == [(0.0, 1.0), (300.0, 2.0), (600.0, 1.0), (900.0, 0.0), (1200.0, 0.0)]
    # (300 * 1 + 300 * 2 + 300 * 1 + 300 * 0) / 1200 = 1.0; peak 2.
    assert concurrency_summary(points) == (1.0, 2.0)


def test_the_report_is_one_file_that_fetches_nothing(tmp_path: Path) -> None:
    agent, noop = _run(tmp_path)
    output = tmp_path / "report.html"
    assert (
        run_command(
            "orchestrator.score.commands",
            ["report", str(agent.path), "--baseline", str(noop.path), "-o", str(output)],
        )
        == 0
    )
    html = output.read_text()
    assert html == render_report(agent, noop, score_bundle(agent, noop))
    for external in ("<script", "<link", "src=", "href=", "url(", "@import"):
        assert external not in html
    assert html.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http") == 0
    assert html.count('class="fault-bar') == 5
    assert html.count('<tr class="fault-row"') == 5


def test_the_rule_health_section_names_each_rule_that_failed_and_the_scores_stay_the_same(
    tmp_path: Path,
) -> None:
    agent, noop = _run(tmp_path)
    assert "No rule health recorded" in rule_health_html(agent)
    error = "Prometheus rejected the query: parse error <unclosed>"
    rules: list[Record] = [
        RuleFailed(rule="CartBroken", group="online-boutique", t=120.0, error=error),
        RuleFailed(rule="CartBroken", group="online-boutique", t=240.0, error="the second failure"),
        RuleHealth(rule="CartBroken", group="online-boutique", evaluations=30, failures=2),
        RuleHealth(rule="CartErrors", group="online-boutique", evaluations=30, failures=0),
    ]
    failing = build(tmp_path, [*_records(), *rules], name="failing")
    html = render_report(failing, noop, score_bundle(failing, noop))
    assert "<h2>Rule health</h2>" in html
    assert "2 rules evaluated over 60 windows; 1 failed" in html
    assert html.count('<tr class="rule-failed">') == 1
    assert "<td>CartBroken</td><td>online-boutique</td><td>2 of 30</td>" in html
    assert "t=120 s: Prometheus rejected the query: parse error &lt;unclosed&gt;" in html
    assert "the second failure" not in html  # the first failure of each rule is shown
    assert scorecard_json(score_bundle(failing, noop)) == scorecard_json(score_bundle(agent, noop))

    healthy = build(tmp_path, [*_records(), rules[-1]], name="healthy")
    assert rule_health_html(healthy) == (
        '<p class="rule-health">1 rule evaluated over 30 windows; none failed.</p>'
    )
    cut = build(tmp_path, [*_records(), rules[0]], name="cut")
    assert "the run ended without its summary; 1 failed" in rule_health_html(cut)
    assert "<td>1</td>" in rule_health_html(cut)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))

    def with_class(self, tag: str, css: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.found if t == tag and css in (a.get("class") or "").split()]


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.environ.get("CI"):
        pytest.fail("chromium is not installed, but CI is set: the report test must run there")
    if found is None:
        pytest.skip("chromium is not installed")
    return found


def _headless(browser: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, timeout=120, check=True)


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Rows of RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6) and header[12] == 0
    channels = 4 if colour_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, up_left = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def _count_colour(rows: list[bytes], channels: int, colour: str) -> int:
    rgb = bytes.fromhex(colour.removeprefix("#"))
    return sum(1 for row in rows for x in range(0, len(row), channels) if row[x : x + 3] == rgb)


def test_headless_chromium_draws_every_chart(tmp_path: Path) -> None:
    browser = _chromium()
    assert browser is not None
    agent, noop = _run(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render_report(agent, noop, score_bundle(agent, noop)))

    dom = _Elements()
    dom.feed(_headless(browser, tmp_path, "--dump-dom", page.as_uri()).stdout.decode())
    assert len(dom.with_class("rect", "fault-bar")) == 5
    assert len(dom.with_class("rect", "alert-mark")) == 4 and len(dom.with_class("rect", "action-mark")) == 2
    series = {
        next(c for c in (a["class"] or "").split() if c != "series"): a
        for a in dom.with_class("polyline", "series")
    }
    assert set(series) == {"live-faults", "agent", "no-action"}
    assert all(int(a["data-points"] or 0) >= 2 for a in series.values())
    assert len(dom.with_class("rect", "stage-bar")) >= 5

    shot = tmp_path / "report.png"
    _headless(
        browser,
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1000,2200",
        "--hide-scrollbars",
        page.as_uri(),
    )
    _, channels, rows = _png_pixels(shot)
    for outcome, colour in OUTCOME_COLOURS.items():
        # Each outcome colours one timeline bar (plus its legend swatch and table border).
        assert _count_colour(rows, channels, colour) > 150, outcome
    assert _count_colour(rows, channels, AGENT_COLOUR) > 300  # agent curve, live faults, stage bars
    assert _count_colour(rows, channels, BASELINE_COLOUR) > 100  # the no-action curve
