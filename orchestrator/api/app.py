"""The FastAPI application: runs, live events, bundles, scores, reports, the leaderboard, the control
plane's own metrics and the dashboard.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from sse_starlette.sse import EventSourceResponse

from orchestrator.api import artifacts, dashboard
from orchestrator.api.apidocs import (
    API_DESCRIPTION,
    EVENTS_DESCRIPTION,
    LIVE_EVENT,
    METRICS_DESCRIPTION,
    mount_redoc,
    with_event_schemas,
)
from orchestrator.api.leaderboard import leaderboard, result_of_row
from orchestrator.api.metrics import Metrics
from orchestrator.api.models import (
    Created,
    Health,
    Leaderboard,
    RunPage,
    RunRequest,
    RunView,
    Score,
    Source,
    Status,
)
from orchestrator.api.nightly_routes import mount_nightly
from orchestrator.api.registry import Registry, RunRow, TargetBusy
from orchestrator.api.runs import RunManager, TooManyRuns, config_problems
from orchestrator.api.views import links_of, view_of
from orchestrator.errors import InputError, OrchestratorError

SSE_POLL_S = 0.25
# A validation error quotes at most this much of the value it refused: a huge body is not echoed back.
ECHO_CHARS = 200
MAX_ERRORS = 20


@dataclass(frozen=True)
class Settings:
    db_url: str
    data_dir: Path
    token: str | None
    max_active: int = 4


Responses = dict[int | str, dict[str, Any]]
NOT_FOUND: Responses = {404: {"description": "no such run"}}
AUTH: Responses = {401: {"description": "missing or wrong bearer token"}}


BEARER = HTTPBearer(auto_error=False)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]


def authorised(request: Request, credentials: Credentials) -> None:
    """Mutating endpoints, and reads that carry a run's ground truth (its live events, its bundle; its score
    and report until it ends), need the bearer token; without a configured token (loopback only) anyone
    may."""
    token: str | None = request.app.state.token
    if token is None:
        return
    given = credentials.credentials if credentials is not None else ""
    if not secrets.compare_digest(given.encode(), token.encode()):
        raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


RUN_FILTERS = ("app", "agent", "status", "source", "seed", "offset", "limit")


def known_filters(request: Request) -> None:
    """Refuse a query parameter ``GET /runs`` does not know, naming it (a dependency, so it is answered
    before the known parameters are validated)."""
    unknown = sorted(set(request.query_params) - set(RUN_FILTERS))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise HTTPException(400, f"unknown query parameter {names}; known: {', '.join(RUN_FILTERS)}")


def create_app(settings: Settings, *, nightly: Path | None = None) -> FastAPI:
    """The app; ``nightly`` names a matrix file to schedule while the server runs."""
    registry = Registry(settings.db_url)
    metrics = Metrics(registry)
    runs = RunManager(
        registry=registry, metrics=metrics, data_dir=settings.data_dir, max_active=settings.max_active
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(runs.recover)
        scheduler = None
        if nightly is not None:
            from orchestrator.api.nightly import start_scheduler, stop_scheduler

            scheduler = start_scheduler(runs, config_path=nightly, db_url=settings.db_url)
        yield
        if scheduler is not None:
            stop_scheduler(scheduler)
        await asyncio.to_thread(runs.shutdown)

    # Swagger UI (/docs) and ReDoc (/redoc) from assets the package ships: the docs work offline.
    app = FastAPIOffline(
        title="marathon control plane",
        version="1",
        lifespan=lifespan,
        description=API_DESCRIPTION,
        redoc_url=None,  # mount_redoc's, below
        swagger_ui_parameters={"validatorUrl": None},  # no badge from the online validator
        # The HTTP server itself answers 400 to a request it cannot parse (a bad Content-Length, say),
        # before any route sees it: every operation can answer it.
        responses={400: {"description": "the request is not well-formed HTTP"}},
    )
    app.state.runs = runs
    app.state.token = settings.token
    mount_redoc(app)
    openapi = app.openapi
    app.openapi = lambda: with_event_schemas(app, openapi)  # type: ignore[method-assign]

    def found(run_id: str) -> RunRow:
        row = registry.get(run_id)
        if row is None:
            raise HTTPException(404, f"no run {run_id!r}")
        return row

    @app.exception_handler(InputError)
    async def input_error(_request: Request, exc: InputError) -> JSONResponse:
        problems = config_problems(exc.problems, str(exc))
        return JSONResponse(status_code=422, content={"detail": bounded_errors(problems)})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": bounded_errors(exc.errors())})

    @app.post(
        "/runs", status_code=201, response_model=Created, dependencies=[Depends(authorised)],
        summary="Start a marathon",
        responses={**AUTH, 400: {"description": "the body is not JSON"},
                   409: {"description": "a run is active on that cluster target"},
                   429: {"description": "the server runs as many marathons as allowed"}},
    )  # fmt: skip
    def start_run(request: RunRequest) -> Created:
        """Validate the request, register the run and start it in a worker process. The run's catalog and
        schedule are checked before anything starts: a problem is answered 422, naming the field."""
        try:
            row = runs.submit(request)
        except TargetBusy as exc:
            raise HTTPException(409, f"run {exc.run_id} is active on that cluster target") from None
        except TooManyRuns as exc:
            raise HTTPException(429, str(exc)) from None
        return Created(id=row.id, status="running", links=links_of(row.id))

    @app.get(
        "/runs", response_model=RunPage, dependencies=[Depends(known_filters)],
        responses={400: {"description": "a query parameter that is not a filter (it is named)"}},
    )  # fmt: skip
    def list_runs(
        app_name: Annotated[str | None, Query(alias="app", max_length=64)] = None,
        agent: Annotated[str | None, Query(max_length=128)] = None,
        status: Annotated[Status | None, Query()] = None,
        source: Annotated[Source | None, Query(description="who started the run")] = None,
        seed: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> RunPage:
        """Runs newest first, filtered by every filter given; an unknown query parameter is refused (400)
        rather than ignored, so a misspelt filter never answers with every run."""
        total, rows = registry.page(
            app=app_name, agent=agent, status=status, source=source, seed=seed, offset=offset, limit=limit
        )
        return RunPage(total=total, offset=offset, limit=limit, runs=[view_of(r, runs.events) for r in rows])

    @app.get("/runs/{run_id}", response_model=RunView, responses=NOT_FOUND, summary="A run")
    def get_run(run_id: str) -> RunView:
        """The run's registry row: status, progress, live faults by id, counts, its score once scored.
        Public: a live run's fault ids tell nothing of their catalog entries."""
        return view_of(found(run_id), runs.events)

    @app.post(
        "/runs/{run_id}/stop", status_code=202, response_model=RunView, dependencies=[Depends(authorised)],
        responses={**AUTH, **NOT_FOUND}, summary="Stop a run",
    )  # fmt: skip
    def stop_run(run_id: str) -> RunView:
        """Ask the run to end gracefully: it reverts its faults, seals its bundle and scores what it has.
        A run already ending or ended is left as it is."""
        row = runs.stop(run_id)
        if row is None:
            raise HTTPException(404, f"no run {run_id!r}")
        return view_of(row, runs.events)

    @app.get(
        "/runs/{run_id}/events",
        response_class=EventSourceResponse, dependencies=[Depends(authorised)],
        summary="Follow a run's events",
        responses={200: {"content": {"text/event-stream": {"schema": {"$ref": LIVE_EVENT}}},
                         "description": EVENTS_DESCRIPTION},
                   **AUTH, **NOT_FOUND},
    )  # fmt: skip
    async def run_events(request: Request, run_id: str) -> EventSourceResponse:
        """The run's live events as server-sent events, from the first (or after ``Last-Event-ID``) until
        the run ends; an ended run's events are replayed. They tell which faults are where: the token's."""
        row = await asyncio.to_thread(found, run_id)
        log = runs.events(row)
        start = _last_event_id(request)

        async def stream() -> AsyncIterator[dict[str, str]]:
            current, seq = log, start
            while True:
                if not runs.follows(run_id):  # another process appends to its file: read it again
                    current = runs.events(await asyncio.to_thread(found, run_id))
                events, closed = current.since(seq)
                for event in events:
                    yield {"event": str(event.get("type", "message")), "id": str(event["seq"]),
                           "data": json.dumps(event, sort_keys=True)}  # fmt: skip
                seq += len(events)
                if closed:
                    yield {"event": "end", "data": "{}"}
                    return
                if await request.is_disconnected():
                    return
                await asyncio.sleep(SSE_POLL_S)

        return EventSourceResponse(stream(), ping=15)

    @app.get(
        "/runs/{run_id}/bundle",
        response_class=FileResponse, dependencies=[Depends(authorised)],
        responses={200: {"content": {"application/zstd": {}}, "description": "the sealed bundle, packed"},
                   **AUTH, **NOT_FOUND, 409: {"description": "the bundle is not sealed yet"}},
        summary="Download a run's bundle",
    )  # fmt: skip
    def run_bundle(run_id: str) -> FileResponse:
        """The sealed run bundle as a zstd-compressed tar, to verify and score offline
        (``marathon score``). It holds the ground truth: the token's."""
        row = found(run_id)
        packed = _ready(artifacts.packed_bundle, row)
        return FileResponse(packed, media_type="application/zstd", filename=f"{row.id}.bundle.tar.zst")

    def ended(run_id: str, request: Request, credentials: HTTPAuthorizationCredentials | None) -> RunRow:
        """The run, if it has ended or the caller holds the token: what a live run has scored or reported
        so far would tell which faults are in the cluster. Ended runs are public, for the leaderboard."""
        row = found(run_id)
        if row.active:
            authorised(request, credentials)
        return row

    @app.get(
        "/runs/{run_id}/score", response_model=Score, response_model_exclude_unset=True,
        summary="A run's score",
        responses={**NOT_FOUND, 401: {"description": "the run is live and the bearer token missing or wrong"},
                   409: {"description": "not scored yet"}},
    )  # fmt: skip
    def run_score(run_id: str, request: Request, credentials: Credentials) -> Score:
        """The run's scorecard, as ``marathon score BUNDLE --json`` prints it (docs/metrics.md). Public once
        the run has ended; until then the token's."""
        row = ended(run_id, request, credentials)
        if row.score is None:
            raise HTTPException(409, f"run {run_id} has no score ({row.status})")
        return Score.model_validate(row.score)

    @app.get(
        "/runs/{run_id}/report", response_class=HTMLResponse,
        responses={**NOT_FOUND, 401: {"description": "the run is live and the bearer token missing or wrong"},
                   409: {"description": "the bundle is not sealed yet"}},
        summary="A run's report",
    )  # fmt: skip
    def run_report(run_id: str, request: Request, credentials: Credentials) -> HTMLResponse:
        """The run's self-contained HTML report (``marathon report``). Public once the run has ended."""
        row = ended(run_id, request, credentials)
        return HTMLResponse(_ready(artifacts.report_html, row).read_text(encoding="utf-8"))

    @app.get("/leaderboard", response_model=Leaderboard)
    def get_leaderboard() -> Leaderboard:
        """Per app x agent, the mean marathon score over seeds (the latest completed run of each seed) with
        its 95 % Student t interval (null with one seed), the mean component figures and the consistency
        of fault resolution; stopped, failed and interrupted runs are listed apart, in no mean."""
        return leaderboard(result_of_row(row) for row in registry.ended())

    @app.get(
        "/metrics", response_class=Response, summary="Prometheus metrics of the control plane",
        responses={200: {"content": {"text/plain": {}}, "description": METRICS_DESCRIPTION}},
    )  # fmt: skip
    def get_metrics() -> Response:
        """The Prometheus text exposition of the control plane's metrics, for operators (a scrape target)."""
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/healthz", response_model=Health, summary="Liveness")
    def healthz() -> Health:
        """The server answers, and how many runs this server follows."""
        return Health(status="ok", active_runs=len(runs.live))

    mount_nightly(app, registry)
    dashboard.mount(app)
    return app


def _ready(make: Any, row: RunRow) -> Path:
    if row.active:
        raise HTTPException(409, f"run {row.id} is {row.status}: its bundle is sealed when it ends")
    try:
        path: Path = make(row)
    except FileNotFoundError:
        raise HTTPException(404, f"run {row.id} left no bundle") from None
    except OrchestratorError as exc:
        raise HTTPException(409, f"run {row.id}: {exc}") from None
    return path


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "")
    return int(raw) + 1 if raw.isdigit() else 0


def bounded_errors(errors: Any) -> list[dict[str, Any]]:
    """The first ``MAX_ERRORS`` validation errors, each quoting the refused value to at most
    ``ECHO_CHARS`` characters, so a huge body is never sent back (no side effects). A value that is not a
    string is quoted as its JSON text when that is longer."""
    errors = list(errors)
    bounded = []
    for error in jsonable_encoder(errors[:MAX_ERRORS]):
        error = dict(error)
        error.pop("url", None)
        if "input" in error:
            error["input"] = _quote(error["input"])
        if isinstance(error.get("ctx"), dict):
            error["ctx"] = {key: _quote(value) for key, value in error["ctx"].items()}
        if isinstance(error.get("msg"), str):
            error["msg"] = _clip(error["msg"])
        bounded.append(error)
    if len(errors) > MAX_ERRORS:
        more = len(errors) - MAX_ERRORS
        bounded.append({"loc": ["body"], "msg": f"and {more} more errors", "type": "more"})
    return bounded


def _quote(value: Any) -> Any:
    if isinstance(value, str):
        return _clip(value)
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= ECHO_CHARS else _clip(text)


def _clip(text: str) -> str:
    if len(text) <= ECHO_CHARS:
        return text
    return f"{text[:ECHO_CHARS]}... ({len(text)} characters)"
