"""The dashboard: one self-contained page and its script, served by the app itself (no CDN)."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

STATIC = resources.files("orchestrator.api") / "static"


def mount(app: FastAPI) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse((STATIC / "dashboard.html").read_text(encoding="utf-8"))

    @app.get("/static/dashboard.js", include_in_schema=False)
    def script() -> Response:
        return Response(
            (STATIC / "dashboard.js").read_text(encoding="utf-8"), media_type="text/javascript; charset=utf-8"
        )
