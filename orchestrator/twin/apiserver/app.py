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
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import yaml
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver import discovery, metrics_api, openapi, protobuf, reviews
from orchestrator.twin.apiserver.handlers import Route, dispatch, parse_route
from orchestrator.twin.apiserver.podexec import check_exec, serve_exec
from orchestrator.twin.apiserver.portforward import check_portforward, serve_portforward
from orchestrator.twin.apiserver.tables import table, wants_table
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.selectors import labels_match, parse_field_selector, parse_label_selector
from orchestrator.twin.store import PODS, Change
from orchestrator.twin.timefmt import rfc3339_nano

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "application/apply-patch+yaml")
WATCH_POLL_S = 0.05
FOLLOW_POLL_S = 0.2
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
    if media == protobuf.MEDIA_TYPE:
        return protobuf.decode(raw), "application/json"
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
        if scope["type"] == "websocket" and not self._carries_token(scope):
            await send({"type": "websocket.close", "code": 1008})  # refused before the upgrade: a 403
            return
        await self.app(scope, receive, send)

    def _carries_token(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                # The scheme is case-insensitive, as the API server's bearer authenticator reads it.
                return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self._token)
        return False


Serve = Callable[[WebSocket, Cluster, str, str], Awaitable[None]]
Check = Callable[[Cluster, str, str, Any], None]


def _stream_routes(app: FastAPI, cluster: Cluster, subresource: str, serve: Serve, check: Check) -> None:
    """A pod's streaming subresource: ``serve`` a WebSocket session, ``check`` (always refusing) a plain
    HTTP request."""
    path = f"/api/v1/namespaces/{{namespace}}/pods/{{name}}/{subresource}"

    async def over_websocket(websocket: WebSocket) -> None:
        await serve(websocket, cluster, websocket.path_params["namespace"], websocket.path_params["name"])

    async def over_http(request: Request) -> Response:
        check(cluster, request.path_params["namespace"], request.path_params["name"], request.query_params)
        raise AssertionError(f"unreachable: a plain {subresource} request is always refused")

    app.add_api_websocket_route(path, over_websocket)
    app.add_api_route(path, over_http, methods=["GET", "POST"])


def build_app(cluster: Cluster, *, token: str, usage: metrics_api.UsageSource | None = None) -> FastAPI:
    """The FastAPI app serving ``cluster`` over the Kubernetes REST conventions to holders of ``token``;
    with ``usage`` (the app model's containers' usage) it serves the resource metrics API too."""
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
        listing = discovery.api_group_list()
        if usage is not None:
            listing["groups"].append(metrics_api.group())
        return JSONResponse(listing)

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
        review = reviews.kind_of(params["group"], params["version"], params.get("rest", ""))
        if review is not None and request.method == "POST":
            body, _media = await read_body(request)
            return JSONResponse(reviews.answer(review, body), status_code=201)
        return await _serve(cluster, request, params["group"], params["version"], params.get("rest", ""))

    # pods/exec and pods/portforward: their WebSocket protocols, and the refusals of a plain request (no
    # upgrade, or SPDY's own, which the twin does not speak); added before the generic routes.
    for subresource, serve, check in (("exec", serve_exec, check_exec),
                                      ("portforward", serve_portforward, check_portforward)):  # fmt: skip
        _stream_routes(app, cluster, subresource, serve, check)
    app.add_api_route("/version", version, methods=["GET"])
    for path in ("/healthz", "/livez", "/readyz"):
        app.add_api_route(path, healthz, methods=["GET"])
    app.add_api_route("/api", core_root, methods=["GET"])
    app.add_api_route("/apis", groups_root, methods=["GET"])
    app.add_api_route("/api/v1", core, methods=_METHODS)
    app.add_api_route("/api/v1/{rest:path}", core, methods=_METHODS)
    if usage is not None:
        metrics_api.register(app, cluster, usage)
    app.add_api_route("/apis/{group}", group_root, methods=["GET"])
    app.add_api_route("/apis/{group}/{version}", named, methods=_METHODS)
    app.add_api_route("/apis/{group}/{version}/{rest:path}", named, methods=_METHODS)

    async def openapi_v2(request: Request) -> Response:
        # Go clients ask for gnostic's protobuf form; JSON readers get the same definitions as JSON.
        accept = request.headers.get("accept", "")
        if any(asked in accept for asked in openapi.V2_PROTOBUF_ASKED):
            return Response(openapi.v2_protobuf(), media_type=openapi.V2_PROTOBUF)
        return Response(openapi.v2_document(), media_type="application/json")

    async def openapi_index(_request: Request) -> JSONResponse:
        return JSONResponse(openapi.v3_index())

    async def openapi_document(request: Request) -> Response:
        document = openapi.v3_documents().get(request.path_params["rest"].strip("/"))
        if document is None:
            raise _not_found_path()
        return Response(document, media_type="application/json")

    app.add_api_route("/openapi/v2", openapi_v2, methods=["GET"])
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
            cluster,
            route,
            request.method,
            dict(query),
            body,
            media,
            accept=request.headers.get("accept", ""),
            user_agent=request.headers.get("user-agent", ""),
        )
    if route.subresource == "log" and query.get("follow") in ("true", "1") and isinstance(result.body, str):
        return _follow_log(cluster, request, route, result.body)
    response: Response
    if isinstance(result.body, str):
        response = PlainTextResponse(result.body, status_code=result.code)
    else:
        response = JSONResponse(result.body, status_code=result.code)
    for warning in result.warnings:
        response.headers.append("Warning", f'299 - "{_quoted(warning)}"')
    return response


def _quoted(text: str) -> str:
    """The text of a Warning header's quoted string (RFC 7234): backslash and double quote escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _follow_log(cluster: Cluster, request: Request, route: Route, first: str) -> StreamingResponse:
    """``kubectl logs -f``: the lines asked for, then each new line of the same container attempt as the
    twin appends it, until the pod is gone, the container restarts, or the client leaves."""
    namespace, pod = route.namespace or "", route.name or ""
    query = request.query_params
    with cluster.lock:
        container = (
            query.get("container") or cluster.store.get(PODS, namespace, pod)["spec"]["containers"][0]["name"]
        )
        where: dict[str, str] = {"namespace": namespace, "pod": pod, "container": container}
        attempt = cluster.logbook.attempts(**where)
        seen = cluster.logbook.lines(namespace=namespace, pod=pod, container=container) or []
    last = seen[-1][0] if seen else float("-inf")
    at_last = sum(1 for t, _line in seen if t == last)
    stamped = query.get("timestamps") in ("true", "1")

    async def stream() -> AsyncIterator[bytes]:
        nonlocal last, at_last
        if first:
            yield first.encode()
        while not await request.is_disconnected():
            with cluster.lock:
                if (
                    cluster.store.find(PODS, namespace, pod) is None
                    or cluster.logbook.attempts(**where) != attempt
                ):
                    return
                fresh = (
                    cluster.logbook.lines(namespace=namespace, pod=pod, container=container, since=last) or []
                )
            fresh = fresh[at_last:] if fresh and fresh[0][0] == last else fresh
            if fresh:
                if fresh[-1][0] == last:
                    at_last += len(fresh)
                else:
                    last = fresh[-1][0]
                    at_last = sum(1 for t, _line in fresh if t == last)
                yield "".join(
                    f"{rfc3339_nano(t)} {line}\n" if stamped else f"{line}\n" for t, line in fresh
                ).encode()
            await asyncio.sleep(FOLLOW_POLL_S)

    return StreamingResponse(stream(), media_type="text/plain")


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
