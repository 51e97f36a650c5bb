"""The API docs work without the internet: /docs (Swagger UI) and /redoc load their scripts and styles from
the control plane itself, and in a headless Chromium that may reach 127.0.0.1 only they render every
operation without a console error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from orchestrator.api.app import Settings, create_app
from tests.api.live import Server
from tests.api.test_dashboard import ARGS, CHROMIUM, needs_chromium

ASSET = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("control")
    app = create_app(Settings(db_url=f"sqlite:///{data / 'registry.sqlite'}", data_dir=data, token=None))
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_their_assets_from_the_server_itself(client: TestClient, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assets = ASSET.findall(html.text)
    assert any(asset.endswith(".js") for asset in assets), assets
    for asset in assets:
        assert urlsplit(asset).netloc == "", asset  # a path on this server, not a CDN's URL
        fetched = client.get(asset)
        assert fetched.status_code == 200, asset
        assert len(fetched.content) > 1000, asset
        if asset.endswith(".js"):
            assert b"cdn.redoc.ly" not in fetched.content, asset  # ReDoc's logo, inlined (empty)
    assert "cdn." not in html.text and "fonts.googleapis" not in html.text


@pytest.mark.slow
@needs_chromium
def test_swagger_ui_and_redoc_render_every_operation_with_no_request_beyond_the_server(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import Page, Route, sync_playwright

    live = Server(data=tmp_path / "control").start()
    refused: dict[str, list[str]] = {"/docs": [], "/redoc": []}
    errors: dict[str, list[str]] = {"/docs": [], "/redoc": []}

    def watch(page: Page, path: str) -> None:
        def only_the_server(route: Route) -> None:
            if urlsplit(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                refused[path].append(route.request.url)
                route.abort()

        page.route("**/*", only_the_server)
        page.on("console", lambda m: errors[path].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors[path].append(str(exc)))
        page.on("requestfailed", lambda r: None if r.url in refused[path] else errors[path].append(r.url))

    try:
        with live.client() as client:
            operations = [(method, path, op["summary"])
                          for path, ops in client.get("/openapi.json").json()["paths"].items()
                          for method, op in ops.items()]  # fmt: skip
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                swagger = browser.new_page()
                watch(swagger, "/docs")
                swagger.goto(f"{live.url}/docs")
                swagger.wait_for_selector(".opblock.opblock-post [data-path='/runs']", timeout=60_000)
                for method, path, _ in operations:
                    assert swagger.locator(f".opblock.opblock-{method} [data-path='{path}']").count() == 1, (
                        path
                    )
                swagger.click(".opblock.opblock-post [data-path='/runs']")  # expand: the request body's model
                swagger.wait_for_selector(".opblock.is-open .opblock-section-request-body", timeout=30_000)
                assert '"online-boutique"' in (swagger.text_content(".opblock.is-open") or "")  # its example

                redoc = browser.new_page()
                watch(redoc, "/redoc")
                redoc.goto(f"{live.url}/redoc")
                redoc.wait_for_selector("text=Start a marathon", timeout=60_000)
                for _, _, summary in operations:
                    assert redoc.get_by_text(summary, exact=True).count() >= 1, summary
                redoc.wait_for_selector("text=LiveEvent", timeout=30_000)  # the events' schema is shown
            finally:
                browser.close()
    finally:
        live.stop()
    assert refused == {"/docs": [], "/redoc": []}
    assert errors == {"/docs": [], "/redoc": []}
