"""A small synchronous client of the marathon tools over MCP (streamable HTTP, bearer token).

Agents are plain synchronous programs; the official MCP client is async, so one blocking portal (a private
event loop thread) holds the session open for the whole invocation and every call is run through it.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from orchestrator.errors import AgentError

URL_ENV = "MARATHON_MCP_URL"
TOKEN_ENV = "MARATHON_TOKEN"


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the server lists it: what an agent needs to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def result_to_dict(result: CallToolResult) -> dict[str, Any]:
    """A tool result in the REST mirror's shape: ``{"ok": True, "result": ...}`` or ``{"ok": False,
    "error": {"type", "message"}}`` (no side effects)."""
    text = "".join(part.text for part in result.content if isinstance(part, TextContent))
    payload: Any
    if result.structured_content is not None:
        payload = result.structured_content
        # Structured output of a non-object return value is wrapped as {"result": value} by the SDK.
        if isinstance(payload, dict) and set(payload) == {"result"}:
            payload = payload["result"]
    else:
        try:
            payload = json.loads(text) if text else None
        except json.JSONDecodeError:
            payload = text
    if isinstance(payload, dict) and isinstance(payload.get("ok"), bool):
        return payload  # the server already speaks the envelope
    if result.is_error:
        error = payload.get("error") if isinstance(payload, dict) else None
        if not isinstance(error, dict):
            error = {"type": "ToolError", "message": text or str(payload)}
        return {"ok": False, "error": error}
    return {"ok": True, "result": payload}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The default TLS context, built once per process: loading the system's CA store costs tens of
    milliseconds, and an agent forked from a warm-start template inherits the template's."""
    return httpx2.create_ssl_context()


class ToolClient:
    """``list_tools()`` and ``call(name, **args)`` over one MCP session; use as a context manager."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 60.0) -> None:
        self.url = url
        self._token = token
        self._timeout_s = timeout_s
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._client_cm: AbstractContextManager[Client] | None = None
        self._client: Client | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ToolClient:
        env = os.environ if environ is None else environ
        missing = [name for name in (URL_ENV, TOKEN_ENV) if not env.get(name)]
        if missing:
            raise AgentError(f"environment variable(s) {', '.join(missing)} not set: no tools server to call")
        return cls(env[URL_ENV], env[TOKEN_ENV])

    def __enter__(self) -> ToolClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        http = httpx2.AsyncClient(
            verify=tls_context(),
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=httpx2.Timeout(self._timeout_s, read=max(self._timeout_s, 300.0)),
        )
        # The modern protocol probe is skipped on purpose: the legacy handshake works with every server.
        client = Client(
            streamable_http_client(self.url, http_client=http),
            mode="legacy",
            read_timeout_seconds=self._timeout_s,
            cache=None,
        )
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._client_cm = self._portal.wrap_async_context_manager(_OwnedClient(client, http))
            self._client = self._client_cm.__enter__()
        except Exception as exc:
            self._close_portal()
            cause = _innermost(exc)
            raise AgentError(f"cannot open an MCP session at {self.url}: {cause}") from exc

    def close(self) -> None:
        try:
            if self._client_cm is not None:
                self._client_cm.__exit__(None, None, None)
        finally:
            self._client_cm = None
            self._client = None
            self._close_portal()

    def _close_portal(self) -> None:
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
        self._portal_cm = None
        self._portal = None

    def _require(self) -> tuple[BlockingPortal, Client]:
        if self._portal is None or self._client is None:
            raise AgentError("the tool client is not open")
        return self._portal, self._client

    def list_tools(self) -> list[ToolSpec]:
        portal, client = self._require()
        listing = portal.call(client.list_tools)
        return [
            ToolSpec(name=tool.name, description=tool.description or "", input_schema=dict(tool.input_schema))
            for tool in listing.tools
        ]

    def call(self, name: str, /, **args: Any) -> dict[str, Any]:
        """Call tool ``name``; refusals and tool errors come back as ``{"ok": False, ...}``, not raised."""
        portal, client = self._require()
        try:
            result = portal.call(client.call_tool, name, args)
        except Exception as exc:
            cause = _innermost(exc)
            return {"ok": False, "error": {"type": type(cause).__name__, "message": str(cause)}}
        return result_to_dict(result)


def _innermost(exc: BaseException) -> BaseException:
    # Task groups wrap the transport's real failure (e.g. a 401) in exception groups.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class _OwnedClient:
    """Enters the MCP client and closes its HTTP client afterwards, both inside the portal's task."""

    def __init__(self, client: Client, http: httpx2.AsyncClient) -> None:
        self._client = client
        self._http = http

    async def __aenter__(self) -> Client:
        await self._http.__aenter__()
        try:
            return await self._client.__aenter__()
        except BaseException:
            await self._http.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._client.__aexit__(*exc)
        finally:
            await self._http.__aexit__(None, None, None)
