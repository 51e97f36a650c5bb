"""The dashboard: one self-contained page, its script and its style sheet, served by the app itself (no
CDN), and the choices its start form offers."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, Response

from orchestrator.agents import AGENT_NAMES
from orchestrator.catalog.apps import app_names

STATIC = resources.files("orchestrator.api") / "static"
ASSETS = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}


def mount(app: FastAPI) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse((STATIC / "dashboard.html").read_text(encoding="utf-8"))

    @app.get("/static/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        media_type = ASSETS.get(name)
        if media_type is None:
            raise HTTPException(404, f"no asset {name!r}")
        return Response((STATIC / name).read_text(encoding="utf-8"), media_type=media_type)

    @app.get("/dashboard/choices", include_in_schema=False)
    def choices() -> dict[str, list[str]]:
        """What the start form offers: the apps with a catalog and the baseline agents."""
        return {"apps": list(app_names()), "agents": list(AGENT_NAMES)}
