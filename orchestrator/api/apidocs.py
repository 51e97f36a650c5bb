"""The prose of the control plane's OpenAPI document, the live events' schemas added to it (the SSE stream
is not a response model FastAPI can describe by itself), and the ReDoc page, served offline."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse, Response
from pydantic import TypeAdapter

from orchestrator.api.models import LiveEvent

API_DESCRIPTION = """\
Start, follow and stop fault-injection marathons; their bundles, scores and reports; a leaderboard; the
control plane's own Prometheus metrics.

With a token configured (`marathon serve --token` or `$MARATHON_API_TOKEN`), starting and stopping runs,
a run's live events and its bundle need `Authorization: Bearer <token>`, and so do a live run's score and
report. Validation errors (422) quote at most 200 characters of a refused value.
"""

EVENTS_DESCRIPTION = """\
Server-sent events, one per event of the run: the SSE `event` is the event's `type`, its `id` the event's
`seq` (send it back as `Last-Event-ID` to resume after it), its `data` the event as JSON, one of the
`LiveEvent` schemas. A last event named `end`, with data `{}`, closes the stream when the run has ended.
"""

METRICS_DESCRIPTION = """\
Prometheus text format 0.0.4. Runs, their live state and their scores come from the run registry (every
run, whichever process follows it): `marathon_runs`, `marathon_runs_ended_total`, `marathon_active_runs`,
`marathon_run_active_faults`, `marathon_run_firing_alerts`, `marathon_run_agent_invocations_total`,
`marathon_agent_invocations_total`, `marathon_run_score` (the newest scored runs per app and agent),
`marathon_leaderboard_{best,latest,mean}_score`, `marathon_leaderboard_runs`, `marathon_registry_up`.
This server's own runs also count `marathon_injections_total`, `marathon_reverts_total`,
`marathon_failures_total` and `marathon_invocation_duration_seconds`.
"""

REF_TEMPLATE = "#/components/schemas/{model}"
LIVE_EVENT = REF_TEMPLATE.format(model="LiveEvent")


def event_schemas() -> dict[str, Any]:
    """Component schemas: ``LiveEvent`` (one of the event types, told apart by ``type``) and one per
    event type (no side effects)."""
    schema = TypeAdapter(LiveEvent).json_schema(ref_template=REF_TEMPLATE)
    components: dict[str, Any] = schema.pop("$defs")
    components["LiveEvent"] = {
        **schema,
        "title": "LiveEvent",
        "description": "One event of a run, as the data of a server-sent event.",
    }
    return components


def with_event_schemas(app: FastAPI, openapi: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """FastAPI's document (``openapi``, which keeps it in ``app.openapi_schema``) with the event schemas."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = openapi()
    document.setdefault("components", {}).setdefault("schemas", {}).update(event_schemas())
    return document


# ReDoc's side menu shows Redocly's logo from Redocly's CDN; offline that is a failed request and a console
# error, so the script is served with an empty inline image in its place.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"
REDOC_SCRIPT = "/docs-assets/redoc.standalone.js"


@functools.cache
def _redoc_script() -> bytes:
    packaged = resources.files("fastapi_offline") / "static" / "redoc.standalone.js"
    return packaged.read_text(encoding="utf-8").replace(REDOC_LOGO, EMPTY_IMAGE).encode()


def mount_redoc(app: FastAPI, *, path: str = "/redoc") -> None:
    """ReDoc at ``path``, from this server only (``FastAPIOffline`` with ``redoc_url=None`` first)."""

    @app.get(path, include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - ReDoc",
            redoc_js_url=REDOC_SCRIPT,
            redoc_favicon_url="/static-offline-docs/favicon.png",
            with_google_fonts=False,
        )

    @app.get(REDOC_SCRIPT, include_in_schema=False)
    def redoc_script() -> Response:
        return Response(_redoc_script(), media_type="text/javascript; charset=utf-8")
