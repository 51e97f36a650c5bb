"""The metering proxy: an OpenAI-compatible endpoint on 127.0.0.1 that forwards the agent's model calls.

It records every completed call as a ``ModelCall`` (schedule time from ``now_s()``), hands each invocation a
fresh key (the only one it accepts) and refuses calls with 429 once the invocation's token budget is spent.
Streaming calls are passed through event by event; usage is requested from the upstream with
``stream_options.include_usage`` and read from the final chunk (which is dropped again when the agent did
not ask for it). ``recorder`` is called on the proxy's server thread.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from orchestrator.bundle.records import ModelCall, Price
from orchestrator.errors import AgentError
from orchestrator.serving import LocalServer, serve_locally

log = logging.getLogger(__name__)

# Dollars per million tokens, list prices; ``*`` prices any model the table does not name.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input_usd_per_mtok=2.50, output_usd_per_mtok=10.00),
    "gpt-4o-mini": Price(input_usd_per_mtok=0.15, output_usd_per_mtok=0.60),
    "gpt-4.1": Price(input_usd_per_mtok=2.00, output_usd_per_mtok=8.00),
    "gpt-4.1-mini": Price(input_usd_per_mtok=0.40, output_usd_per_mtok=1.60),
    "*": Price(input_usd_per_mtok=1.00, output_usd_per_mtok=4.00),
}

_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}


def error_body(message: str, *, kind: str, code: str) -> dict[str, Any]:
    """An OpenAI-style error object (no side effects)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def usage_of(payload: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a completion or chunk, or None when it carries no usage."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


@dataclass
class _Invocation:
    n: int
    key: str
    budget_tokens: int | None
    used_tokens: int = 0


class MeteringProxy:
    """``start() -> base_url`` (ending in ``/v1``), ``open_invocation(n, budget_tokens) -> key``,
    ``close_invocation()``, ``stop()``."""

    def __init__(
        self,
        upstream_url: str,
        upstream_key: str,
        recorder: Callable[[ModelCall], object],
        now_s: Callable[[], float],
        *,
        timeout_s: float = 300.0,
    ) -> None:
        self.upstream_url = upstream_url.rstrip("/")
        self._upstream_key = upstream_key
        self._recorder = recorder
        self._now_s = now_s
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._invocation: _Invocation | None = None
        self._server: LocalServer | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )
        self._http: httpx.AsyncClient | None = None

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self, *, unix_socket: Path | None = None) -> str:
        """Serve on a free port of 127.0.0.1, and on ``unix_socket`` too when given (where the agent's
        sandbox connects); returns the base URL."""
        if self._server is not None:
            raise AgentError("the metering proxy is already running")
        self._server = serve_locally(
            self.app, name="the metering proxy", error=AgentError, timeout_s=15.0, unix_socket=unix_socket
        )
        return f"{self._server.url}/v1"

    def stop_soon(self) -> None:
        """Tell the server to stop, without waiting (``stop`` waits)."""
        if self._server is not None:
            self._server.stop_soon()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(timeout_s=15.0)
        self._server = None

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(self._timeout_s, connect=10.0)) as http:
            self._http = http
            yield
            self._http = None

    # --- invocations -----------------------------------------------------------------------------------
    def open_invocation(self, n: int, budget_tokens: int | None) -> str:
        """A fresh key for invocation ``n``; the previous key stops working."""
        key = "mk-" + secrets.token_urlsafe(24)
        with self._lock:
            self._invocation = _Invocation(n=n, key=key, budget_tokens=budget_tokens)
        return key

    def close_invocation(self) -> None:
        with self._lock:
            self._invocation = None

    def used_tokens(self) -> int:
        with self._lock:
            return self._invocation.used_tokens if self._invocation is not None else 0

    # --- handlers --------------------------------------------------------------------------------------
    def _admit(self, request: Request) -> JSONResponse | None:
        header = request.headers.get("authorization", "")
        with self._lock:
            current = self._invocation
            valid = current is not None and secrets.compare_digest(header, f"Bearer {current.key}")
            if current is None or not valid:
                return JSONResponse(
                    error_body("Incorrect API key provided.", kind="invalid_request_error",
                               code="invalid_api_key"),
                    status_code=401,
                )  # fmt: skip
            if current.budget_tokens is not None and current.used_tokens >= current.budget_tokens:
                message = (
                    f"token budget of invocation {current.n} exhausted: "
                    f"{current.used_tokens} of {current.budget_tokens} tokens used"
                )
                return JSONResponse(
                    error_body(message, kind="insufficient_quota", code="token_budget_exhausted"),
                    status_code=429,
                )
        return None

    def _record(self, model: str, tokens_in: int, tokens_out: int) -> None:
        with self._lock:
            if self._invocation is not None:
                self._invocation.used_tokens += tokens_in + tokens_out
            self._recorder(
                ModelCall(t=self._now_s(), model=model, tokens_in=tokens_in, tokens_out=tokens_out)
            )

    def _upstream_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._upstream_key}", "Content-Type": "application/json"}

    async def _models(self, request: Request) -> Response:
        refused = self._admit(request)
        if refused is not None:
            return refused
        assert self._http is not None
        try:
            upstream = await self._http.get(f"{self.upstream_url}/models", headers=self._upstream_headers())
        except httpx.HTTPError as exc:
            return _unreachable(exc)
        return Response(upstream.content, status_code=upstream.status_code,
                        media_type=upstream.headers.get("content-type", "application/json"))  # fmt: skip

    async def _chat(self, request: Request) -> Response:
        refused = self._admit(request)
        if refused is not None:
            return refused
        try:
            body = json.loads(await request.body())
        except json.JSONDecodeError as exc:
            return JSONResponse(error_body(f"the body is not JSON: {exc}", kind="invalid_request_error",
                                           code="invalid_json"), status_code=400)  # fmt: skip
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return JSONResponse(error_body("the body must be an object naming a model",
                                           kind="invalid_request_error", code="invalid_body"),
                                status_code=400)  # fmt: skip
        if body.get("stream"):
            return await self._chat_stream(body)
        assert self._http is not None
        try:
            upstream = await self._http.post(
                f"{self.upstream_url}/chat/completions", json=body, headers=self._upstream_headers()
            )
        except httpx.HTTPError as exc:
            return _unreachable(exc)
        if upstream.is_success:
            payload = _json_or_none(upstream.content)
            tokens = usage_of(payload) or _estimate(body, payload)
            model = payload.get("model") if isinstance(payload, dict) else None
            self._record(model if isinstance(model, str) else body["model"], *tokens)
        return Response(upstream.content, status_code=upstream.status_code,
                        media_type=upstream.headers.get("content-type", "application/json"))  # fmt: skip

    async def _chat_stream(self, body: dict[str, Any]) -> Response:
        assert self._http is not None
        given = body.get("stream_options")
        options: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        wants_usage = bool(options.get("include_usage"))
        forwarded = {**body, "stream_options": {**options, "include_usage": True}}
        request = self._http.build_request(
            "POST", f"{self.upstream_url}/chat/completions", json=forwarded, headers=self._upstream_headers()
        )
        try:
            upstream = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            return _unreachable(exc)
        if not upstream.is_success:
            content = await upstream.aread()
            await upstream.aclose()
            return Response(content, status_code=upstream.status_code,
                            media_type=upstream.headers.get("content-type", "application/json"))  # fmt: skip
        headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}
        return StreamingResponse(self._relay(upstream, body, wants_usage=wants_usage),
                                 status_code=upstream.status_code, headers=headers)  # fmt: skip

    async def _relay(self, upstream: httpx.Response, body: dict[str, Any], *, wants_usage: bool
                     ) -> AsyncIterator[bytes]:  # fmt: skip
        usage: tuple[int, int] | None = None
        model: str = body["model"]
        text_out: list[str] = []
        buffer = b""
        try:
            async for chunk in upstream.aiter_bytes():
                buffer += chunk.replace(b"\r\n", b"\n")
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    payload = _event_payload(event)
                    if isinstance(payload, dict):
                        named = payload.get("model")
                        model = named if isinstance(named, str) else model
                        usage = usage_of(payload) or usage
                        text_out.append(json.dumps(payload.get("choices") or []))
                        if not wants_usage and usage_of(payload) is not None and not payload.get("choices"):
                            continue  # the agent did not ask for the usage chunk: it gets none
                    yield event + b"\n\n"
            if buffer.strip():
                yield buffer
        finally:
            await upstream.aclose()
            tokens = usage or _estimate(body, {"choices_text": "".join(text_out)})
            self._record(model, *tokens)


def _event_payload(event: bytes) -> Any:
    data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
    if not data or data == b"[DONE]":
        return None
    return _json_or_none(data)


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _estimate(body: dict[str, Any], payload: Any) -> tuple[int, int]:
    # Only when the upstream reports no usage: about four characters per token keeps the budget honest.
    prompt = len(json.dumps(body.get("messages") or [])) // 4
    completion = len(json.dumps(payload)) // 4 if payload is not None else 0
    return prompt, completion


def _unreachable(exc: httpx.HTTPError) -> JSONResponse:
    return JSONResponse(
        error_body(f"the upstream model endpoint failed: {exc}", kind="api_error", code="upstream_error"),
        status_code=502,
    )
