"""The dashboard in a headless Chromium: without the token it says the live events need it and shows
none; with the token its fault concurrency chart fills from the live event stream, and a finished run links
its report."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.api.live import TOKEN, Server, start_run, wait_ended

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip

needs_chromium = pytest.mark.skipif(
    not (Path(CHROMIUM).is_file() or shutil.which("chromium")) and not os.environ.get("CI"),
    reason="Chromium is not installed (the test runs wherever CI is set)",
)


def _points(page: object) -> int:
    value = page.get_attribute("#chart-concurrency", "data-points")  # type: ignore[attr-defined]
    return int(value or 0)


@pytest.mark.slow
@needs_chromium
def test_the_dashboard_asks_for_the_token_then_draws_the_live_concurrency_chart_and_links_the_report(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    live = Server(data=tmp_path / "control").start()
    try:
        with live.client() as client, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                run_id = start_run(client, seed=9)
                page = browser.new_page()
                page.goto(f"{live.url}/")
                page.wait_for_selector(f"tr[data-run='{run_id}']", timeout=30_000)
                assert page.text_content("#live-id") == run_id  # the live run is followed by itself
                page.wait_for_selector("#live[data-locked='true']", timeout=30_000)
                assert "enter the control plane's token" in (page.text_content("#live-log") or "")
                assert _points(page) == 0  # nothing of the run's events reached the page
                page.fill("#token", "not-the-token")
                page.click("#token-form button")
                page.wait_for_function(
                    "document.querySelector('#live-log').textContent.includes('refused this token')",
                    timeout=30_000,
                )
                assert _points(page) == 0
                page.fill("#token", TOKEN)
                page.click("#token-form button")
                page.wait_for_selector("#live[data-locked='false']", timeout=30_000)
                assert page.text_content("#token-state") == "token set for this tab"
                page.wait_for_function(
                    "document.querySelector('#chart-concurrency').dataset.points >= 2", timeout=120_000
                )
                first = _points(page)
                page.wait_for_function(
                    f"document.querySelector('#chart-concurrency').dataset.points > {first}", timeout=120_000
                )
                assert _points(page) > first
                path = page.get_attribute("#chart-concurrency path", "d") or ""
                assert path.startswith("M") and "V" in path  # a step line with at least one change
                wait_ended(client, run_id)
                page.wait_for_selector(
                    f"tr[data-run='{run_id}'] a[href='/runs/{run_id}/report']", timeout=30_000
                )
                assert page.text_content(f"tr[data-run='{run_id}'] .status") == "finished"
                page.reload()
                page.wait_for_selector(f"#leaderboard a[href='/runs/{run_id}/report']", timeout=30_000)
            finally:
                browser.close()
    finally:
        live.stop()
