"""The twin's Kubernetes API server subset: discovery, CRUD, patch, watch, pods/log, scale, Table output.

``build_app(cluster, token=...)`` returns a FastAPI app; the official Python client and kubectl talk to it
unchanged. Every request runs under ``cluster.lock``, so it never sees a half-applied controller step.

Every path but the public-info ones needs ``Authorization: Bearer <token>``, as on a kube-apiserver whose
anonymous access is limited to the endpoints RBAC's ``system:public-info-viewer`` grants: anything else
without the token is a 401 ``Status``. The guard wraps the whole app, so routes added later (the twin's
control API, its trace queries) are behind it too.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver import discovery
from orchestrator.twin.apiserver.handlers import Route, dispatch, parse_route
from orchestrator.twin.apiserver.tables import table, wants_table
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.selectors import labels_match, parse_field_selector, parse_label_selector
from orchestrator.twin.store import Change

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "application/apply-patch+yaml")
WATCH_POLL_S = 0.05
DEFAULT_WATCH_TIMEOUT_S = 1800
# What system:public-info-viewer lets system:unauthenticated read on a default kube-apiserver.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


# metav1.StatusDetails' fields in the order the API server encodes them; empty ones are omitted.
_DETAIL_FIELDS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")


def status_body(error: ApiStatusError) -> dict[str, Any]:
    """The Status of a refusal, its fields in the API server's order (clients show the body verbatim)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": error.reason,
    }
    if error.details:
        given = dict(error.details)
        ordered = {k: given.pop(k) for k in _DETAIL_FIELDS if k in given}
        body["details"] = {k: v for k, v in {**ordered, **given}.items() if v not in (None, "", [])}
    body["code"] = error.code
    return body


class StatusResponse(JSONResponse):
    """A Status as the API server writes it: compact JSON ended by a newline (Go's json.Encoder)."""

    def render(self, content: Any) -> bytes:
        return super().render(content) + b"\n"


def status_response(error: ApiStatusError) -> JSONResponse:
    return StatusResponse(status_body(error), status_code=error.code)


def _not_found_path() -> ApiStatusError:
    return ApiStatusError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
    )


async def read_body(request: Request) -> tuple[Any, str]:
    """The parsed request body and its media type; malformed JSON or YAML is a 400 as upstream."""
    raw = await request.body()
    media = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if not raw.strip():
        return None, media
    try:
        if media in _YAML_TYPES:
            return yaml.safe_load(raw), media
        return json.loads(raw), media
    except (ValueError, yaml.YAMLError) as exc:
        raise ApiStatusError(
            400, "BadRequest", f"couldn't get version/kind; json parse error: {str(exc).splitlines()[0]}"
        ) from exc


class BearerGuard:
    """ASGI middleware: a request off ``PUBLIC_PATHS`` without the bearer ``token`` is answered 401."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        if not token:
            raise ValueError("the twin's API needs a non-empty bearer token")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in PUBLIC_PATHS and not self._carries_token(scope):
            unauthorized = ApiStatusError(401, "Unauthorized", "Unauthorized")
            await status_response(unauthorized)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _carries_token(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                # The scheme is case-insensitive, as the API server's bearer authenticator reads it.
                return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self._token)
        return False


def build_app(cluster: Cluster, *, token: str) -> FastAPI:
    """The FastAPI app serving ``cluster`` over the Kubernetes REST conventions to holders of ``token``."""
    app = FastAPI(title="marathon twin", openapi_url=None, docs_url=None, redoc_url=None)
    app.add_middleware(BearerGuard, token=token)

    @app.exception_handler(ApiStatusError)
    async def _status_error(_request: Request, exc: ApiStatusError) -> JSONResponse:
        return status_response(exc)

    @app.exception_handler(Exception)
    async def _internal_error(_request: Request, exc: Exception) -> JSONResponse:
        # A defect of the twin still answers as an API server does, so clients report it plainly.
        return status_response(ApiStatusError(500, "InternalError", f"Internal error occurred: {exc!r}"))

    async def version(_request: Request) -> JSONResponse:
        return JSONResponse(discovery.version())

    async def healthz(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def core_root(_request: Request) -> JSONResponse:
        return JSONResponse(discovery.api_versions())

    async def groups_root(_request: Request) -> JSONResponse:
        return JSONResponse(discovery.api_group_list())

    async def group_root(request: Request) -> JSONResponse:
        group = request.path_params["group"]
        for name, group_version in discovery.groups():
            if name == group:
                return JSONResponse(discovery.api_group(name, group_version))
        raise _not_found_path()

    async def core(request: Request) -> Response:
        return await _serve(cluster, request, "", "v1", request.path_params.get("rest", ""))

    async def named(request: Request) -> Response:
        params = request.path_params
        return await _serve(cluster, request, params["group"], params["version"], params.get("rest", ""))

    async def missing(_request: Request) -> Response:
        raise _not_found_path()

    app.add_api_route("/version", version, methods=["GET"])
    for path in ("/healthz", "/livez", "/readyz"):
        app.add_api_route(path, healthz, methods=["GET"])
    app.add_api_route("/api", core_root, methods=["GET"])
    app.add_api_route("/apis", groups_root, methods=["GET"])
    app.add_api_route("/api/v1", core, methods=_METHODS)
    app.add_api_route("/api/v1/{rest:path}", core, methods=_METHODS)
    app.add_api_route("/apis/{group}", group_root, methods=["GET"])
    app.add_api_route("/apis/{group}/{version}", named, methods=_METHODS)
    app.add_api_route("/apis/{group}/{version}/{rest:path}", named, methods=_METHODS)

    async def openapi_index(_request: Request) -> JSONResponse:
        return JSONResponse(discovery.openapi_v3_index())

    async def openapi_document(request: Request) -> JSONResponse:
        document = discovery.openapi_v3_document(request.path_params["rest"])
        if document is None:
            raise _not_found_path()
        return JSONResponse(document)

    app.add_api_route("/openapi/v2", missing, methods=["GET"])
    app.add_api_route("/openapi/v3", openapi_index, methods=["GET"])
    app.add_api_route("/openapi/v3/{rest:path}", openapi_document, methods=["GET"])
    return app


async def _serve(cluster: Cluster, request: Request, group: str, version: str, rest: str) -> Response:
    segments = [s for s in rest.split("/") if s]
    if not segments:
        if request.method != "GET":
            raise _not_found_path()
        listing = discovery.resource_list(group, version)
        if listing is None:
            raise _not_found_path()
        return JSONResponse(listing)
    route = parse_route(group, version, segments)
    if route is None:
        raise _not_found_path()
    query = request.query_params
    if request.method == "GET" and query.get("watch") in ("true", "1") and route.name is None:
        return _watch(cluster, request, route)
    body, media = (None, "") if request.method == "GET" else await read_body(request)
    with cluster.lock:
        result = dispatch(
            cluster, route, request.method, dict(query), body, media, accept=request.headers.get("accept", "")
        )
    if isinstance(result.body, str):
        return PlainTextResponse(result.body, status_code=result.code)
    return JSONResponse(result.body, status_code=result.code)


def _watch(cluster: Cluster, request: Request, route: Route) -> StreamingResponse:
    """Stream watch events: current objects (or changes since ``resourceVersion``), then live changes."""
    query = request.query_params
    rtype = route.rtype
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(query.get("fieldSelector"), kind=rtype.kind)
    timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
    since = query.get("resourceVersion")

    def wanted(change: Change) -> bool:
        if change.group != rtype.group or change.plural != rtype.plural:
            return False
        meta = change.obj["metadata"]
        if route.namespace is not None and rtype.namespaced and meta.get("namespace") != route.namespace:
            return False
        return labels_match(labels, meta.get("labels")) and fields(change.obj)

    as_table = wants_table(request.headers.get("accept", ""))
    include = query.get("includeObject", "Metadata")
    printed = [False]

    def line(kind: str, obj: dict[str, Any]) -> bytes:
        if as_table and kind != "ERROR":
            # kubectl get -w asks for Table events: one row each, the columns only in the first.
            obj = table(
                rtype,
                [obj],
                now=cluster.now,
                resource_version=obj["metadata"].get("resourceVersion", ""),
                include=include,
                columns_too=not printed[0],
            )
            printed[0] = True
        return (json.dumps({"type": kind, "object": obj}) + "\n").encode()

    async def stream() -> AsyncIterator[bytes]:
        with cluster.lock:
            if since and since != "0":
                start = int(since) if since.isdigit() else 0
                backlog = cluster.store.changes_since(start)
                if backlog is None:
                    gone = ApiStatusError(
                        410,
                        "Expired",
                        f"too old resource version: {start} ({cluster.store.resource_version})",
                    )
                    yield line("ERROR", status_body(gone))
                    return
                first = [line(c.type, c.obj) for c in backlog if wanted(c)]
            else:
                namespace = route.namespace if rtype.namespaced else None
                first = [
                    line("ADDED", o)
                    for o in cluster.store.list(rtype, namespace, labels=labels, fields=fields)
                ]
            start = cluster.store.resource_version
        for chunk in first:
            yield chunk
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if await request.is_disconnected():
                return
            with cluster.lock:
                changes = cluster.store.changes_since(start) or []
                start = cluster.store.resource_version
            for change in changes:
                if wanted(change):
                    yield line(change.type, change.obj)
            await asyncio.sleep(WATCH_POLL_S)

    return StreamingResponse(stream(), media_type="application/json")
