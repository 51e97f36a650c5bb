"""A scripted OpenAI-compatible server (Starlette, 127.0.0.1) for tests: it replays a list of turns.

Each turn is either tool calls or a final answer, with known usage. The answers name ``Script.model``, or the
model each request asked for when ``echo_model`` is set (as a real endpoint does). Streaming requests get
the same turn as chunks, with a usage chunk only when ``stream_options.include_usage`` asks for it. Every
request received is kept, with its Authorization header, so tests can check what reached the upstream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.agents.serving import serving

UPSTREAM_KEY = "sk-upstream-test"


@dataclass(frozen=True)
class Turn:
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    content: str = ""
    prompt_tokens: int = 100
    completion_tokens: int = 10


@dataclass
class Script:
    turns: list[Turn]
    model: str = "fake-model-1"
    echo_model: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    served: list[Turn] = field(default_factory=list)

    def next_turn(self) -> Turn:
        index = len(self.served)
        turn = self.turns[index] if index < len(self.turns) else Turn(content="done")
        self.served.append(turn)
        return turn


def _message(turn: Turn, index: int) -> dict[str, Any]:
    if turn.tool_calls:
        calls = [
            {"id": f"call_{index}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(turn.tool_calls)
        ]  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": calls}
    return {"role": "assistant", "content": turn.content}


def _usage(turn: Turn) -> dict[str, int]:
    return {
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
    }


def build_app(script: Script) -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        script.requests.append(body)
        script.auth.append(request.headers.get("authorization", ""))
        if request.headers.get("authorization") != f"Bearer {UPSTREAM_KEY}":
            return JSONResponse({"error": {"message": "bad key", "type": "auth"}}, status_code=401)
        index = len(script.served)
        turn = script.next_turn()
        message = _message(turn, index)
        finish = "tool_calls" if turn.tool_calls else "stop"
        asked = body.get("model")
        model = asked if script.echo_model and isinstance(asked, str) else script.model
        base = {"id": f"chatcmpl-{index}", "created": 0, "model": model}
        if not body.get("stream"):
            return JSONResponse({
                **base, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _usage(turn),
            })  # fmt: skip
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            chunk = {**base, "object": "chat.completion.chunk"}
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
            if turn.tool_calls:
                calls = enumerate(message["tool_calls"])
                deltas += [{"tool_calls": [{"index": i, **call}]} for i, call in calls]
            else:
                deltas += [{"content": part} for part in (turn.content[:3], turn.content[3:]) if part]
            for delta in deltas:
                payload = {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                yield f"data: {json.dumps(payload)}\n\n".encode()
            final = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
            yield f"data: {json.dumps(final)}\n\n".encode()
            if wants_usage:
                yield f"data: {json.dumps({**chunk, 'choices': [], 'usage': _usage(turn)})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": script.model, "object": "model"}]})

    return Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ])  # fmt: skip


@contextmanager
def fake_openai(turns: list[Turn], *, echo_model: bool = False) -> Iterator[tuple[str, Script]]:
    """Yield (base URL ending in /v1, the script with its log) while the fake serves."""
    script = Script(turns=list(turns), echo_model=echo_model)
    with serving(build_app(script)) as base:
        yield f"{base}/v1", script
