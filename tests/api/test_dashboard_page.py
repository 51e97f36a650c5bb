"""The dashboard as an operator uses it, in a headless Chromium: start a realtime run from the page with the
token, watch its active faults (category and target) and its firing alerts by name, and stop it from the
page; the stopped run is marked in the run table and kept off the leaderboard. A viewer without the token
sees the categories and the alert names, never a target. The page logs no error or warning, fits a 760 px
window without scrolling sideways, and no text in its header or run table overlaps other text. Screenshots
at 1400 and 760 px go to the test's own directory, or to $MARATHON_SCREENSHOTS (docs/screenshots/ holds the
committed ones) when it is set."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.api.views import public_live
from orchestrator.run.events import Alert, Finished, Injected, Reverted, wire
from tests.api.live import TOKEN, Server
from tests.api.test_dashboard import ARGS, CHROMIUM, needs_chromium

WAIT_MS = 120_000
LOUD = ("error", "warning")
# A realtime twin at 20 simulated seconds per wall second: the first faults land and their alerts fire within
# half a minute of wall time, and the schedule (an hour) lasts longer than the test needs to stop it.
RUN_FORM = {
    "#start-clock": "realtime", "#start-speed": "20", "#start-faults": "4",
    "#start-injection": "960", "#start-observation": "2640",
}  # fmt: skip

# Pairs of text boxes that intersect, among the elements each selector finds (the text itself, not the
# boxes of the cells or items holding it, so a cell's text spilling into its neighbour counts).
OVERLAPS = """selectors => {
  const boxes = [];
  for (const selector of selectors) {
    for (const node of document.querySelectorAll(selector)) {
      if (!node.getClientRects().length) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      const name = `${selector} ${node.textContent.trim().slice(0, 24)}`;
      if (r.width > 0 && r.height > 0) boxes.push({ name, r });
    }
  }
  const found = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
        found.push(`${boxes[i].name} / ${boxes[j].name}`);
      }
    }
  }
  return found;
}"""
# Texts squeezed into a column too narrow for them: broken over more than two lines.
SQUEEZED = """selector => [...document.querySelectorAll(selector)].filter(node => {
  const range = document.createRange();
  range.selectNodeContents(node);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 2;
}).map(node => node.textContent.trim().slice(0, 40))"""
LISTED = "#runs td, #live h2 > *, #active-faults li span:not(.sub), #firing-alerts li span:not(.sub)"
# Cells whose text is wider than the cell (clipped or spilling over).
SPILLS = """() => [...document.querySelectorAll('#runs th, #runs td, header.top *')]
  .filter(n => n.getClientRects().length && getComputedStyle(n).display !== 'inline')
  .filter(n => n.scrollWidth > n.clientWidth + 1)
  .map(n => `${n.tagName} ${n.textContent.trim().slice(0, 24)}`)"""


def test_anyone_sees_a_live_runs_fault_categories_and_firing_alert_names_but_no_target() -> None:
    events = [
        wire(e)
        for e in (
            Injected(fault_id="f000", catalog_id="ob-a", t=1.0, category="network", target="cartservice"),
            Injected(fault_id="f001", catalog_id="ob-b", t=2.0, category="code-bug", target="adservice"),
            Alert(alert_id="a1", rule="KubePodNotReady", state="firing", service="cartservice", t=3.0),
            Alert(alert_id="a2", rule="HighErrors", state="firing", service="adservice", t=3.0),
            Alert(alert_id="a1", rule="KubePodNotReady", state="resolved", service="cartservice", t=4.0),
            Reverted(fault_id="f000", t=5.0, outcome="reverted"),
        )
    ]
    assert public_live(events) == (["code-bug"], ["HighErrors"])
    assert public_live([*events, wire(Finished(status="stopped"))]) == ([], [])


def _layout_problems(page: Any, run_id: str) -> dict[str, Any]:
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    header = ["header.top h1", "#token-form label", "#token-form button", "#token-state", "#token-note"]
    table = ["#runs thead th", f"#runs tr[data-run='{run_id}'] td"]
    groups = [header, table, ["#live h2 > *"]]
    return {
        "scroll_width": width[0] > width[1],
        "overlaps": [pair for group in groups for pair in page.evaluate(OVERLAPS, group)],
        "spills": page.evaluate(SPILLS),
        "squeezed": page.evaluate(SQUEEZED, LISTED),
    }


@pytest.mark.slow
@needs_chromium
def test_the_dashboard_starts_a_run_shows_its_faults_and_alerts_by_name_and_stops_it(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    live = Server(data=tmp_path / "control").start()
    logged: list[str] = []
    try:
        with live.client() as client, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.on("console", lambda m: logged.append(f"{m.type}: {m.text}") if m.type in LOUD else None)
                page.on("pageerror", lambda exc: logged.append(f"pageerror: {exc}"))
                page.goto(f"{live.url}/")
                page.wait_for_selector("#start-form[data-ready='true']", timeout=30_000)
                page.wait_for_selector("#nightly[data-state='none']", timeout=30_000)
                assert page.text_content("#nightly-next") == "no nightly schedule"  # the server runs none

                page.fill("#token", TOKEN)
                page.click("#token-form button")
                page.select_option("#start-app", "online-boutique")
                page.select_option("#start-agent", "noop")
                page.fill("#start-seed", "9")
                page.click("#start-form summary")
                for selector, value in RUN_FORM.items():
                    if selector == "#start-clock":
                        page.select_option(selector, value)
                    else:
                        page.fill(selector, value)
                page.uncheck("#start-baseline")
                page.click("#start-button")
                page.wait_for_selector("#start-state[data-run]", timeout=60_000)
                run_id = page.get_attribute("#start-state", "data-run") or ""
                page.wait_for_selector(f"#runs tr[data-run='{run_id}']", timeout=30_000)
                assert page.text_content("#live-id") == run_id
                view = client.get(f"/runs/{run_id}").json()
                assert (view["clock"], view["seed"], view["source"]) == ("realtime", 9, "api")

                # Faults with their targets and alerts by name, from the token's event stream.
                page.wait_for_function(
                    "document.querySelectorAll('#active-faults li[data-fault]').length > 0"
                    " && document.querySelectorAll('#firing-alerts li[data-alert]').length > 0",
                    timeout=WAIT_MS,
                )
                fault = page.locator("#active-faults li[data-fault]").first
                assert fault.get_attribute("data-category") == fault.locator(".category").text_content()
                assert (fault.locator(".target").text_content() or "").strip()  # the target, with the token
                rules = page.locator("#firing-alerts li[data-alert] .alert").all_text_contents()
                assert rules and all(rule.isidentifier() for rule in rules), rules  # e.g. KubePodCrashLooping
                page.wait_for_selector("#invocations tr[data-invocation]", timeout=WAIT_MS)
                assert page.locator("#invocations tr[data-invocation] td").nth(5).text_content() == "0 (ok)"
                page.wait_for_function(
                    "document.querySelector('#chart-concurrency').dataset.points >= 2", timeout=WAIT_MS
                )
                assert page.locator("#chart-concurrency text").count() >= 6  # tick labels and axis titles

                # A viewer without the token: the categories and the alert names, no target.
                anonymous = browser.new_page(viewport={"width": 1400, "height": 1000})
                anonymous.goto(f"{live.url}/")
                anonymous.wait_for_selector("#live[data-locked='true']", timeout=30_000)
                anonymous.wait_for_function(
                    "document.querySelectorAll('#active-faults li[data-category]').length > 0"
                    " && document.querySelectorAll('#firing-alerts li[data-rule]').length > 0",
                    timeout=WAIT_MS,
                )
                public = client.get(f"/runs/{run_id}").json()
                assert public["active_fault_categories"] and public["firing_alert_names"]
                assert anonymous.locator("#active-faults .target").count() == 0
                assert anonymous.locator("#active-faults .hidden-target").count() > 0
                assert anonymous.locator("#firing-alerts li[data-alert]").count() == 0  # no alert ids either
                targets = {e["target"] for e in _events_so_far(live, run_id) if e["type"] == "injected"}
                text = anonymous.text_content("#live") or ""
                assert targets and not any(target in text for target in targets), targets
                anonymous.close()

                shots = Path(os.environ.get("MARATHON_SCREENSHOTS") or tmp_path / "screenshots")
                shots.mkdir(parents=True, exist_ok=True)
                problems = _layout_problems(page, run_id)
                page.screenshot(path=str(shots / "dashboard-1400.png"), full_page=True)
                page.set_viewport_size({"width": 760, "height": 1000})
                page.wait_for_function("window.innerWidth === 760", timeout=10_000)
                page.wait_for_function(
                    "Math.abs(document.querySelector('#chart-concurrency').viewBox.baseVal.width"
                    " - document.querySelector('#chart-concurrency').getBoundingClientRect().width) < 2",
                    timeout=10_000,
                )  # the charts were drawn again for the narrow window
                narrow = _layout_problems(page, run_id)
                page.screenshot(path=str(shots / "dashboard-760.png"), full_page=True)
                fine = {"scroll_width": False, "overlaps": [], "spills": [], "squeezed": []}
                assert problems == fine
                assert narrow == fine

                # Stop it from the page: marked stopped, and not on the leaderboard.
                page.click("#stop-run")
                page.wait_for_function(
                    f"document.querySelector(\"#runs tr[data-run='{run_id}'] .status\").textContent"
                    " === 'stopped'",
                    timeout=WAIT_MS,
                )
                row = page.locator(f"#runs tr[data-run='{run_id}']")
                assert "ended-stopped" in (row.get_attribute("class") or "")
                assert row.locator(f"a[href='/runs/{run_id}/report']").count() == 1
                assert page.locator("#stop-run").is_hidden()
                loaded = int(page.get_attribute("#leaderboard", "data-loaded") or 0)
                page.wait_for_function(
                    f"Number(document.querySelector('#leaderboard').dataset.loaded) > {loaded}",
                    timeout=WAIT_MS,
                )
                assert page.locator(f"#leaderboard a[href='/runs/{run_id}/report']").count() == 0
                board = client.get("/leaderboard").json()
                assert all(run_id not in (r["best"]["run_id"], r["latest"]["run_id"]) for r in board["rows"])
                assert page.locator("#active-faults li[data-fault]").count() == 0  # reverted at the end
            finally:
                browser.close()
    finally:
        live.stop()
    assert logged == []


def _events_so_far(live: Server, run_id: str) -> list[dict[str, Any]]:
    """The run's event log as the server has written it so far."""
    path = live.data / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.endswith("}")]


def _night(day: int) -> dict[str, Any]:
    stamp = f"2026-11-{day:02d}T02:00:00+00:00"
    failed = day == 28
    runs = [
        {"run_id": f"r{day}a", "app": "online-boutique", "agent": "runbook", "seed": 1, "status": "finished",
         "marathon_score": 40.0 + day},
        {"run_id": f"r{day}b", "app": "online-boutique", "agent": "noop", "seed": 1,
         "status": "failed" if failed else "finished", "marathon_score": None if failed else 10.0},
    ]  # fmt: skip
    return {"night": stamp, "started_at": stamp, "runs": runs}


# Newest first, as GET /nightly answers.
NIGHTLY = {"next_run_at": "2026-12-03T02:00:00+00:00", "nights": [_night(day) for day in (30, 29, 28)]}


@needs_chromium
def test_the_nightly_panel_shows_the_next_run_and_each_nights_runs_with_a_score_trend() -> None:
    """The page against canned answers of the control plane (no server): GET /nightly's document."""
    from playwright.sync_api import Route, sync_playwright

    static = Path(__file__).resolve().parents[2] / "orchestrator" / "api" / "static"
    answers: dict[str, Any] = {
        "/openapi.json": {"paths": {"/nightly": {}}},
        "/nightly": NIGHTLY,
        "/runs": {"total": 0, "offset": 0, "limit": 50, "runs": []},
        "/leaderboard": {"rows": [], "incomplete": []},
        "/dashboard/choices": {"apps": ["online-boutique"], "agents": ["noop"]},
    }
    files = {
        "/": "dashboard.html",
        "/static/dashboard.js": "dashboard.js",
        "/static/dashboard.css": "dashboard.css",
    }
    types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}

    def serve(route: Route) -> None:
        path = "/" + route.request.url.split("/", 3)[3].split("?")[0]
        if path in files:
            name = files[path]
            route.fulfill(
                body=(static / name).read_text(encoding="utf-8"), content_type=types[Path(name).suffix]
            )
        elif path in answers:
            route.fulfill(json=answers[path])
        else:
            route.fulfill(status=404, json={"detail": "not found"})

    logged: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 760, "height": 900})
            page.on("console", lambda m: logged.append(f"{m.type}: {m.text}") if m.type in LOUD else None)
            page.on("pageerror", lambda exc: logged.append(f"pageerror: {exc}"))
            page.route("http://dashboard.test/**", serve)
            page.goto("http://dashboard.test/")
            page.wait_for_selector("#nightly[data-state='scheduled']", timeout=30_000)
            assert (page.text_content("#nightly-next") or "").startswith("next run: ")
            nights = page.locator("#nightly-nights tbody tr")
            assert nights.count() == 3
            assert [nights.nth(i).get_attribute("data-night") for i in range(3)] == [
                n["night"] for n in NIGHTLY["nights"]
            ]  # newest first
            assert nights.nth(2).locator("td").nth(2).text_content() == "1 finished, 1 failed"
            assert nights.nth(0).locator("td").nth(3).text_content() == "40.0"  # mean of 70 and 10
            assert page.get_attribute("#nightly-chart", "data-points") == "3"
            assert page.locator("#nightly-chart path").count() == 2  # mean and best
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

            answers["/openapi.json"] = {"paths": {}}  # a control plane without the schedule
            page.reload()
            page.wait_for_selector("#nightly[data-state='none']", timeout=30_000)
            assert page.text_content("#nightly-next") == "no nightly schedule"
            assert page.locator("#nightly-nights").is_hidden()
        finally:
            browser.close()
    assert logged == []
