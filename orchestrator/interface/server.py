"""The agent-facing server: MCP (streamable HTTP) at ``/mcp`` and the REST mirror at ``/tools``.

One Starlette app served by uvicorn on 127.0.0.1 in a background thread. Both faces share one tool
registry, one policy and one journaled ``ToolCaller``. Every request needs the bearer token of the open
invocation; between invocations no token is valid.

REST: ``GET /tools`` lists names, effects, descriptions and JSON schemas; ``POST /tools/{name}`` with the
arguments as a JSON object answers 200 ``{"ok": true, "result": ...}`` or ``{"ok": false, "error":
{"type", "message"}}``, 401 without a valid token, 404 for an unknown tool.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from orchestrator.errors import AgentError
from orchestrator.interface.backend import Backend
from orchestrator.interface.calls import Recorder, ToolCaller, UnknownTool
from orchestrator.interface.tools import TOOLS
from orchestrator.serving import LocalServer, serve_locally

START_TIMEOUT_S = 30.0
_UNAUTHORIZED = {
    "ok": False,
    "error": {"type": "unauthorized", "message": "a valid bearer token is required"},
}


class _Tokens:
    """The one valid token (that of the open invocation), or none."""

    def __init__(self) -> None:
        self.current: str | None = None

    def valid(self, header: str | None) -> bool:
        current = self.current
        if current is None or header is None or not header.startswith("Bearer "):
            return False
        return secrets.compare_digest(header[len("Bearer ") :].strip().encode(), current.encode())


def _bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            return bytes(value).decode("latin-1")
    return None


class _Guarded:
    """An ASGI app behind the bearer token check."""

    def __init__(self, app: Any, tokens: _Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.tokens.valid(_bearer(scope)):
            response = JSONResponse(_UNAUTHORIZED, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _mcp_server(caller: ToolCaller) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        del ctx, params
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.schema())
                for t in TOOLS.values()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        del ctx
        try:
            outcome = await anyio.to_thread.run_sync(caller.call, params.name, params.arguments or {})
        except UnknownTool as exc:
            outcome = {"ok": False, "error": {"type": "unknown_tool", "message": str(exc)}}
        text = json.dumps(outcome, sort_keys=True, default=str)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=outcome, is_error=not outcome["ok"]
        )

    return Server("marathon", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def build_app(caller: ToolCaller, tokens: _Tokens) -> Starlette:
    """The ASGI app of both faces (no side effects until served)."""
    manager = StreamableHTTPSessionManager(app=_mcp_server(caller), stateless=True, json_response=True)

    async def list_tools(request: Request) -> Response:
        if not tokens.valid(request.headers.get("authorization")):
            return JSONResponse(_UNAUTHORIZED, status_code=401)
        return JSONResponse({"tools": [t.listing() for t in TOOLS.values()]})

    async def call_tool(request: Request) -> Response:
        if not tokens.valid(request.headers.get("authorization")):
            return JSONResponse(_UNAUTHORIZED, status_code=401)
        name = request.path_params["name"]
        if name not in TOOLS:
            message = f"no tool {name!r}"
            return JSONResponse({"ok": False, "error": {"type": "unknown_tool", "message": message}}, 404)
        body = await request.body()
        try:
            raw = json.loads(body) if body.strip() else {}
        except ValueError as exc:
            error = {"type": "invalid_arguments", "message": f"the body is not JSON: {exc}"}
            return JSONResponse({"ok": False, "error": error}, status_code=400)
        outcome = await run_in_threadpool(caller.call, name, raw)
        return JSONResponse(json.loads(json.dumps(outcome, default=str)))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes = [
        Route("/tools", list_tools, methods=["GET"]),
        Route("/tools/{name}", call_tool, methods=["POST"]),
        Route("/mcp", _Guarded(manager.handle_request, tokens)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


class ToolServer:
    """The agent interface of one run: start, then one token per invocation, then stop."""

    def __init__(self, backend: Backend, recorder: Recorder, *, port: int = 0) -> None:
        self.caller = ToolCaller(backend, recorder)
        self._tokens = _Tokens()
        self._port = port
        self._server: LocalServer | None = None
        self.base_url = ""

    def start(self) -> tuple[str, str]:
        """Serve on 127.0.0.1 (a free port unless given); returns ``(mcp_url, rest_url)``.

        ``rest_url`` is the base URL: the mirror's routes are ``{rest_url}/tools`` and
        ``{rest_url}/tools/{name}``.
        """
        if self._server is not None:
            raise AgentError("the tool server is already started")
        self._server = serve_locally(
            build_app(self.caller, self._tokens), name="the tool server", port=self._port, error=AgentError
        )
        self.base_url = self._server.url
        return f"{self.base_url}/mcp", self.base_url

    def open_invocation(self, n: int) -> str:
        """Begin invocation ``n``: a fresh token (the only secret an agent gets), a fresh mutation count."""
        self.caller.begin(n)
        # A token must not be derivable from the run's seed, so it comes from the OS, not orchestrator.rng.
        token = secrets.token_urlsafe(32)
        self._tokens.current = token
        return token

    def close_invocation(self) -> None:
        """End the invocation: its token stops working at once."""
        self._tokens.current = None

    def stop(self) -> None:
        """Stop serving and wait for the server thread; safe to call twice."""
        self._tokens.current = None
        if self._server is None:
            return
        self._server.stop(timeout_s=START_TIMEOUT_S)
        self._server = None

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
