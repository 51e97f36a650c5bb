"""The report for papers: provenance, breakdowns, time distributions, CSV and SVG exports, and the
aggregate over seeds with confidence intervals."""

from __future__ import annotations

import csv
import hashlib
import io
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.records import Record, RunEnded, ServiceSample
from orchestrator.cli import build_parser
from orchestrator.score.aggregate import consistency, estimate, t_quantile
from orchestrator.score.breakdown import by_category, by_mechanism
from orchestrator.score.charts import RIGHT, WIDTH, distribution_svg, quartiles
from orchestrator.score.report import render_report, report_charts
from orchestrator.score.scorecard import score_bundle
from tests.score.scenario import act, alert, fault, probes, report
from tests.score.test_report import _chromium, _Elements, _headless

DIAGNOSIS = {"culprits": ["cartservice"], "artifact": "config:cartservice/env/REDIS_ADDR"}
STARTED = "2026-03-04T05:06:07+00:00"


def _handled(fault_id: str, inject: float, *, category: str = "configuration") -> list[Record]:
    """A fault detected 60 s, located 120 s and repaired 240 s after its injection."""
    n = fault_id[1:]
    return [
        *fault(fault_id, inject=inject, revert=inject + 600, category=category),
        alert(f"a{n}", start=inject + 30, service="cartservice"),
        report(inject + 60, f"INC-{n}", [f"a{n}"]),
        report(inject + 120, f"INC-{n}", [f"a{n}"], **DIAGNOSIS),
        act(inject + 130, "cartservice", incident=f"INC-{n}"),
        *probes(fault_id, [(inject + 120, False), (inject + 240, True), (inject + 360, True)]),
    ]


def _missed(fault_id: str, inject: float, *, category: str = "dependency") -> list[Record]:
    return fault(fault_id, inject=inject, revert=inject + 600, category=category)


def _bundle(
    path: Path, records: list[Record], *, seed: int = 42, reason: str | None = "completed", **manifest: object
) -> Bundle:
    head = sample_manifest(seed=seed, run_id=f"run-s{seed}", **manifest)
    end = [RunEnded(t=1800.0, reason=reason)] if reason is not None else []
    samples = [ServiceSample(t=60.0 * n, q=10.0, e=0.0, l=0.0) for n in range(31)]
    return read_bundle(write_bundle(path, [head, *records, *samples, *end], runtime={"started_at": STARTED}))


def _two_categories(tmp_path: Path, **kwargs: object) -> Bundle:
    records = [*_handled("f1", 0), *_handled("f2", 300), *_missed("f3", 600)]
    return _bundle(tmp_path / "run", records, **kwargs)  # type: ignore[arg-type]


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *argv],
        capture_output=True, text=True, check=False, cwd=cwd,
        env={"PYTHONPATH": str(Path(__file__).parents[2])},
    )  # fmt: skip


def test_the_provenance_block_names_the_run_its_versions_hashes_and_status(tmp_path: Path) -> None:
    bundle = _two_categories(tmp_path)
    html = render_report(bundle, None, score_bundle(bundle))
    tag_digest = hashlib.sha256((bundle.path / "tagmanifest-sha256.txt").read_bytes()).hexdigest()
    for row in (
        ("Run", "run-s42"),
        ("App / seed / agent", "online-boutique / 42 / test-agent"),
        ("Run date", STARTED),
        ("Status", "completed"),
        ("Rule pack", f"1 (SHA-256 {'1' * 64})"),
        ("Catalog", f"1 (SHA-256 {'0' * 64})"),
        ("Delta / budget", "120 s / 110 s"),
        ("Bundle SHA-256", tag_digest),
        ("Integrity", "verified: manifests and hash chains intact, unsigned"),
        ("No-action baseline", "none: degradation level -"),
    ):
        assert f"<tr><th>{row[0]}</th><td>{row[1]}</td></tr>" in html, row
    assert 'class="warning"' not in html


@pytest.mark.parametrize(
    ("reason", "said"), [("stopped", "stopped"), (None, "partial (no run_ended record)")]
)
def test_a_run_that_did_not_complete_is_marked_as_such_in_the_report_and_the_score(
    tmp_path: Path, reason: str | None, said: str
) -> None:
    bundle = _two_categories(tmp_path, reason=reason)
    html = render_report(bundle, None, score_bundle(bundle))
    assert f'<p class="warning">This run did not complete ({said})' in html
    assert f"<tr><th>Status</th><td>{said.upper()}: NOT A COMPLETE RUN</td></tr>" in html
    done = _cli("score", str(bundle.path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"RUN NOT COMPLETE ({said}): not comparable with complete runs"


def test_faults_are_broken_down_by_category_and_mechanism(tmp_path: Path) -> None:
    card = score_bundle(_two_categories(tmp_path))
    configuration, dependency = by_category(card.outcomes)
    assert (configuration.name, configuration.faults, configuration.repaired) == ("configuration", 2, 2)
    assert (configuration.mean_ttd_s, configuration.mean_ttl_s, configuration.mean_ttr_s) == (60, 120, 240)
    assert (dependency.name, dependency.faults, dependency.correlated, dependency.repaired) == (
        "dependency", 1, 0, 0,
    )  # fmt: skip
    assert dependency.mean_ttd_s is None
    [config] = by_mechanism(card.outcomes)
    assert (config.name, config.faults, config.repaired) == ("config", 3, 2)
    html = render_report(_two_categories(tmp_path / "again"), None, card)
    assert '<tr class="group-row"><td>configuration</td><td>2</td><td>2</td><td>2</td><td>2</td>' in html


def test_the_timeline_labels_each_fault_with_its_catalog_id(tmp_path: Path) -> None:
    bundle = _two_categories(tmp_path)
    html = render_report(bundle, None, score_bundle(bundle))
    for fault_id in ("f1", "f2", "f3"):
        assert f'font-size="11">{fault_id} cat-{fault_id}</text>' in html


def test_the_timeline_scales_bars_between_the_label_column_and_the_right_edge(tmp_path: Path) -> None:
    bundle = _two_categories(tmp_path)
    svg = ElementTree.fromstring(report_charts(bundle, None, score_bundle(bundle))["timeline"])
    ns = "{http://www.w3.org/2000/svg}"
    axis = next(e for e in svg.iter(f"{ns}line") if e.get("class") == "axis")
    left, right = float(axis.get("x1") or 0), float(axis.get("x2") or 0)
    assert 90 <= left <= 200 and right == WIDTH - RIGHT  # the labels "f1 cat-f1" need little room
    bars = {e.get("data-fault"): e for e in svg.iter(f"{ns}rect") if "fault-bar" in (e.get("class") or "")}
    x = {name: float(bar.get("x") or 0) for name, bar in bars.items()}
    width = float(bars["f1"].get("width") or 0)
    # Injections at 0, 300 and 600 s of an 1800 s run; each fault is live for 600 s.
    assert x["f1"] == pytest.approx(left, abs=0.1)
    assert x["f2"] - x["f1"] == pytest.approx((right - left) / 6, abs=0.2)
    assert width == pytest.approx((right - left) / 3, abs=0.2)


def test_the_time_distribution_draws_a_box_and_every_value() -> None:
    assert quartiles([10.0]) == (10.0, 10.0, 10.0)
    assert quartiles([0.0, 10.0, 20.0, 30.0, 40.0]) == (10.0, 20.0, 30.0)
    svg = distribution_svg([("TTD", [60.0, 60.0, 120.0]), ("TTR", [])])
    assert svg.count('class="mttx-point"') == 3 and svg.count('class="mttx-box"') == 1
    assert "no fault reached this stage" in svg
    ElementTree.fromstring(svg)


def test_report_writes_a_directory_of_html_csv_and_svg_and_a_csv_file(tmp_path: Path) -> None:
    bundle = _two_categories(tmp_path)
    out, table = tmp_path / "paper", tmp_path / "faults-only.csv"
    done = _cli("report", str(bundle.path), "-o", str(out), "--csv", str(table), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["report.html", "faults.csv", "categories.csv", "mechanisms.csv"]
        + [f"{chart}.svg" for chart in ("timeline", "concurrency", "degradation", "stages", "mttx")]
    )
    for svg in out.glob("*.svg"):
        ElementTree.parse(svg)  # a standalone, well-formed SVG document
    rows = list(csv.DictReader(io.StringIO((out / "faults.csv").read_text())))
    assert [(r["fault_id"], r["catalog_id"], r["c"], r["ttd_s"]) for r in rows] == [
        ("f1", "cat-f1", "1", "60.000"), ("f2", "cat-f2", "1", "60.000"), ("f3", "cat-f3", "0", ""),
    ]  # fmt: skip
    assert table.read_text() == (out / "faults.csv").read_text()
    categories = list(csv.DictReader(io.StringIO((out / "categories.csv").read_text())))
    assert [(r["category"], r["faults"], r["repaired"]) for r in categories] == [
        ("configuration", "2", "2"), ("dependency", "1", "0"),
    ]  # fmt: skip


def test_the_t_quantile_is_students() -> None:
    # Two-sided 95 % critical values from the standard tables.
    for df, value in ((1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)):
        assert t_quantile(df) == pytest.approx(value, abs=5e-4)
    e = estimate([1.0, 2.0, 3.0, 4.0])
    assert (e.mean, e.sd) == (2.5, pytest.approx(1.2909944))
    half = 3.182446 * 1.2909944 / 2  # t(0.975, 3) * sd / sqrt(n)
    assert (e.low, e.high) == (pytest.approx(2.5 - half), pytest.approx(2.5 + half))
    one = estimate([5.0])
    assert (one.n, one.mean, one.sd, one.low, one.high) == (1, 5.0, None, None, None)


def _seeds(tmp_path: Path) -> list[Bundle]:
    # cat-f1 is resolved in every seed, cat-f2 in seeds 1 and 2, cat-f3 never.
    return [
        _bundle(tmp_path / "s1", [*_handled("f1", 0), *_handled("f2", 300), *_missed("f3", 600)], seed=1),
        _bundle(tmp_path / "s2", [*_handled("f1", 0), *_handled("f2", 300)], seed=2),
        _bundle(tmp_path / "s3", [*_handled("f1", 0), *_missed("f2", 300), *_missed("f3", 600)], seed=3),
    ]


def test_several_bundles_make_an_aggregate_with_means_intervals_and_consistency(tmp_path: Path) -> None:
    bundles = _seeds(tmp_path)
    cards = [score_bundle(b) for b in bundles]
    scores = [c.marathon_score for c in cards]
    assert scores == [pytest.approx(200 / 3), 100.0, pytest.approx(100 / 3)]
    kinds = {k.catalog_id: (k.resolved, k.seeds) for k in consistency(cards)}
    assert kinds == {"cat-f1": (3, 3), "cat-f2": (2, 3), "cat-f3": (0, 2)}

    out = tmp_path / "agg"
    done = _cli("report", *(str(b.path) for b in bundles), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    figures = {r["figure"]: r for r in csv.DictReader(io.StringIO((out / "figures.csv").read_text()))}
    expected = estimate(scores)
    assert figures["Marathon-Score"]["n"] == "3"
    assert float(figures["Marathon-Score"]["mean"]) == pytest.approx(expected.mean, abs=1e-3)
    assert float(figures["Marathon-Score"]["ci95_low"]) == pytest.approx(expected.low, abs=1e-3)
    assert float(figures["Marathon-Score"]["ci95_high"]) == pytest.approx(expected.high, abs=1e-3)
    assert figures["Degradation level %"]["n"] == "0" and figures["Degradation level %"]["mean"] == "-"
    share = {
        r["catalog_id"]: r["share"] for r in csv.DictReader(io.StringIO((out / "kinds.csv").read_text()))
    }
    assert share == {"cat-f1": "1.000", "cat-f2": "0.667", "cat-f3": "0.000"}
    seeds = list(csv.DictReader(io.StringIO((out / "seeds.csv").read_text())))
    assert [r["seed"] for r in seeds] == ["1", "2", "3"] and seeds[1]["marathon_score"] == "100.0"
    html = (out / "report.html").read_text()
    assert "Marathon over 3 seeds: test-agent on online-boutique" in html
    assert '<table class="provenance"><tr class="provenance-row"><td>App / agent</td>' in html
    assert 'class="warning"' not in html
    assert (
        "<td>cat-f2</td><td>configuration</td><td>config</td><td>3</td><td>2 of 3</td><td>0.67</td>" in html
    )
    for external in ("<script", "<link", "src=", "href=", "url(", "@import"):
        assert external not in html


def test_an_aggregate_marks_each_seed_that_did_not_complete(tmp_path: Path) -> None:
    whole = _bundle(tmp_path / "a", _handled("f1", 0), seed=1)
    stopped = _bundle(tmp_path / "b", _handled("f1", 0), seed=2, reason="stopped")
    page = tmp_path / "agg.html"
    done = _cli("report", str(whole.path), str(stopped.path), "-o", str(page), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert '<p class="warning">Seed 2 (run-s2) did not complete (stopped): not comparable.</p>' in html
    assert "Seed 1" not in html


def test_an_aggregate_of_different_apps_or_with_one_baseline_is_refused_in_one_line(tmp_path: Path) -> None:
    one = _bundle(tmp_path / "a", _handled("f1", 0), seed=1)
    other = _bundle(tmp_path / "b", _handled("f1", 0), seed=2, app="train-ticket")
    done = _cli("report", str(one.path), str(other.path), "-o", str(tmp_path / "x.html"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"{other.path}: run_manifest.app = 'train-ticket'" in done.stderr
    done = _cli("report", str(one.path), str(one.path), "--baseline", str(one.path), cwd=tmp_path)
    assert done.returncode == 2 and "--baseline" in done.stderr and "one BUNDLE only" in done.stderr
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("command", ["score", "report"])
def test_every_option_has_help_that_shows_its_default(command: str) -> None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    for action in sub._actions:
        if action.dest == "help":
            continue
        assert action.help, action.dest
        if action.option_strings:
            assert "(default: " in action.help, action.dest
    text = " ".join(sub.format_help().split())
    assert "(default: report.html)" in text or command == "score"
    assert "(default: runs)" in text


def test_headless_chromium_draws_the_distribution_and_the_aggregate_charts(tmp_path: Path) -> None:
    browser = _chromium()
    assert browser is not None
    bundles = _seeds(tmp_path)
    single, aggregate = tmp_path / "single", tmp_path / "aggregate"
    assert _cli("report", str(bundles[0].path), "-o", str(single), cwd=tmp_path).returncode == 0
    assert _cli("report", *(str(b.path) for b in bundles), "-o", str(aggregate), cwd=tmp_path).returncode == 0

    dom = _Elements()
    dom.feed(_headless(browser, tmp_path, "--dump-dom", (single / "report.html").as_uri()).stdout.decode())
    assert len(dom.with_class("circle", "mttx-point")) == 2 + 2 + 2  # TTD, TTL and TTR of f1 and f2
    assert len(dom.with_class("rect", "mttx-box")) == 3
    dom = _Elements()
    dom.feed(_headless(browser, tmp_path, "--dump-dom", (aggregate / "report.html").as_uri()).stdout.decode())
    # A dot per seed for the score and the five fractions; no seed has a degradation level.
    assert len(dom.with_class("circle", "interval-point")) == 3 + 3 * 5
    assert len(dom.with_class("line", "interval-ci")) == 1 + 5
