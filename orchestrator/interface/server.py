"""The agent-facing server: MCP (streamable HTTP) at ``/mcp`` and the REST mirror at ``/tools``.

One Starlette app served by uvicorn on 127.0.0.1 in a background thread. Both faces share one tool
registry, one policy and one journaled ``ToolCaller``. Every request needs the bearer token of the open
invocation; between invocations no token is valid.

REST: ``GET /tools`` lists names, effects, descriptions and JSON schemas; ``POST /tools/{name}`` with the
arguments as a JSON object answers 200 ``{"ok": true, "result": ...}`` or ``{"ok": false, "error":
{"type", "message"}}``, 401 without a valid token, 404 for an unknown tool, 413 for a body over
``bodies.MAX_BODY_BYTES`` and 400 for one that is not JSON or nests too deep. MCP requests are held to the
same body bounds before the MCP library parses them. Every refused request with a valid token is journaled.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
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
from orchestrator.interface.bodies import BodyRejected, check_shape, load_json, parse_json, read_body, replay
from orchestrator.interface.calls import CALL_DEADLINE_S, Recorder, ToolCaller
from orchestrator.interface.tools import TOOLS, Tool
from orchestrator.serving import LocalServer, serve_locally

START_TIMEOUT_S = 30.0
_UNAUTHORIZED = {
    "ok": False,
    "error": {"type": "unauthorized", "message": "a valid bearer token is required"},
}


class _Tokens:
    """The one valid token (that of the open invocation), or none; and the invocation each token was for."""

    def __init__(self) -> None:
        self.current: str | None = None
        self._invocations: dict[str, int] = {}

    def issue(self, invocation: int) -> str:
        # A token must not be derivable from the run's seed, so it comes from the OS, not orchestrator.rng.
        token = secrets.token_urlsafe(32)
        self._invocations[token] = invocation
        self.current = token
        return token

    def valid(self, header: str | None) -> bool:
        current = self.current
        if current is None or header is None or not header.startswith("Bearer "):
            return False
        return secrets.compare_digest(header[len("Bearer ") :].strip().encode(), current.encode())

    def invocation_of(self, header: str | None) -> int:
        """The invocation a token that was valid was issued for (-1 for any other header)."""
        if header is None or not header.startswith("Bearer "):
            return -1
        return self._invocations.get(header[len("Bearer ") :].strip(), -1)


def _bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            return bytes(value).decode("latin-1")
    return None


def _called_tool(message: Any) -> str | None:
    """The tool a JSON-RPC ``tools/call`` message names, if it is one."""
    if isinstance(message, dict) and message.get("method") == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return name if isinstance(name, str) else None
    return None


class _GuardedMcp:
    """The MCP app behind the bearer token check and the body bounds; a refused body is journaled."""

    def __init__(self, app: Any, tokens: _Tokens, caller: ToolCaller) -> None:
        self.app = app
        self.tokens = tokens
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.tokens.valid(_bearer(scope)):
            response = JSONResponse(_UNAUTHORIZED, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            request = Request(scope, receive)
            name: str | None = None
            try:
                body = await read_body(receive, request.headers)
                message = load_json(body)
                name = _called_tool(message)
                check_shape(message)
            except BodyRejected as exc:
                invocation = self.tokens.invocation_of(_bearer(scope))
                reject = functools.partial(self.caller.reject, invocation=invocation)
                outcome = await run_in_threadpool(reject, name, exc.kind, str(exc))
                error = {"code": -32700 if exc.status == 400 else -32600, "message": str(exc)}
                rpc = {"jsonrpc": "2.0", "id": None, "error": error}
                await JSONResponse(rpc, status_code=_status(outcome, exc.status))(scope, receive, send)
                return
            receive = replay(body, receive)
        await self.app(scope, receive, send)


def _mcp_server(caller: ToolCaller, tokens: _Tokens) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        del ctx, params
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.schema())
                for t in caller.tools.values()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        header = request.headers.get("authorization") if isinstance(request, Request) else None
        invocation = tokens.invocation_of(header)
        outcome = await anyio.to_thread.run_sync(
            functools.partial(caller.call, params.name, params.arguments or {}, invocation=invocation)
        )
        text = json.dumps(outcome, sort_keys=True, default=str)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=outcome, is_error=not outcome["ok"]
        )

    return Server("marathon", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _status(outcome: dict[str, Any], usual: int) -> int:
    """The HTTP status of a REST answer: 429 past the request limit, else ``usual``."""
    return 429 if not outcome["ok"] and outcome["error"]["type"] == "rate_limited" else usual


def build_app(caller: ToolCaller, tokens: _Tokens) -> Starlette:
    """The ASGI app of both faces (no side effects until served)."""
    manager = StreamableHTTPSessionManager(
        app=_mcp_server(caller, tokens), stateless=True, json_response=True
    )

    async def list_tools(request: Request) -> Response:
        if not tokens.valid(request.headers.get("authorization")):
            return JSONResponse(_UNAUTHORIZED, status_code=401)
        return JSONResponse({"tools": [t.listing() for t in caller.tools.values()]})

    async def call_tool(request: Request) -> Response:
        if not tokens.valid(request.headers.get("authorization")):
            return JSONResponse(_UNAUTHORIZED, status_code=401)
        name = request.path_params["name"]
        invocation = tokens.invocation_of(request.headers.get("authorization"))
        if name not in caller.tools:
            # Refused before the body is read: an unknown name costs the server nothing but a journal line.
            outcome = await run_in_threadpool(caller.call, name, None, invocation=invocation)
            return JSONResponse(outcome, status_code=_status(outcome, 404))
        try:
            body = await read_body(request.receive, request.headers)
            raw = parse_json(body) if body.strip() else {}
        except BodyRejected as exc:
            reject = functools.partial(caller.reject, invocation=invocation)
            outcome = await run_in_threadpool(reject, name, exc.kind, str(exc))
            return JSONResponse(outcome, status_code=_status(outcome, exc.status))
        # The call runs only if its invocation is still open when its turn comes.
        outcome = await run_in_threadpool(caller.call, name, raw, invocation=invocation)
        return JSONResponse(json.loads(json.dumps(outcome, default=str)), status_code=_status(outcome, 200))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes = [
        Route("/tools", list_tools, methods=["GET"]),
        Route("/tools/{name}", call_tool, methods=["POST"]),
        Route("/mcp", _GuardedMcp(manager.handle_request, tokens, caller)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


class ToolServer:
    """The agent interface of one run: start, then one token per invocation, then stop."""

    def __init__(
        self,
        backend: Backend,
        recorder: Recorder,
        *,
        port: int = 0,
        deadline_s: float = CALL_DEADLINE_S,
        tools: Mapping[str, Tool] = TOOLS,
    ) -> None:
        self.caller = ToolCaller(backend, recorder, deadline_s=deadline_s, tools=tools)
        self._tokens = _Tokens()
        self._port = port
        self._server: LocalServer | None = None
        self.base_url = ""

    def start(self, *, unix_socket: Path | None = None) -> tuple[str, str]:
        """Serve on 127.0.0.1 (a free port unless given), and on ``unix_socket`` too when given (where the
        agent's sandbox connects); returns ``(mcp_url, rest_url)``.

        ``rest_url`` is the base URL: the mirror's routes are ``{rest_url}/tools`` and
        ``{rest_url}/tools/{name}``.
        """
        if self._server is not None:
            raise AgentError("the tool server is already started")
        self._server = serve_locally(
            build_app(self.caller, self._tokens), name="the tool server", port=self._port, error=AgentError,
            unix_socket=unix_socket,
        )  # fmt: skip
        self.base_url = self._server.url
        return f"{self.base_url}/mcp", self.base_url

    def open_invocation(self, n: int) -> str:
        """Begin invocation ``n``: a fresh token (the only secret an agent gets), fresh read and mutation
        counts."""
        self.caller.begin(n)
        return self._tokens.issue(n)

    @property
    def requests(self) -> int:
        """The requests of the open invocation, or of the last one closed; refused ones included."""
        return self.caller.requests

    def close_invocation(self) -> None:
        """End the invocation: its token stops working at once, and a call of it that has not started yet
        (still waiting for its turn) never will."""
        self._tokens.current = None
        self.caller.end()

    def stop_soon(self) -> None:
        """Tell the server to stop, without waiting (``stop`` waits, then journals what was left)."""
        if self._server is not None:
            self._server.stop_soon()

    def stop(self) -> None:
        """Stop serving and wait for the server thread, then journal the calls left unfinished; safe to call
        twice."""
        self._tokens.current = None
        if self._server is not None:
            self._server.stop(timeout_s=START_TIMEOUT_S)
            self._server = None
        self.caller.close()

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
