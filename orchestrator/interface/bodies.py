"""Bounds on a request body from the agent, checked before anything else parses it: its size, and the
nesting depth and key length of its JSON. No request can make the server allocate or recurse without bound.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.types import Message, Receive

from orchestrator.errors import InputError

MAX_BODY_BYTES = 1 << 20  # a 100,000-character diff escaped as JSON fits; a 2 MB report does not
DRAIN_BYTES = 64 << 20  # past the cap the rest is read and dropped (so the client gets its 413) up to this
MAX_DEPTH = 32  # tool arguments nest 4 deep at most; the MCP envelope adds 3
MAX_KEY_CHARS = 256


class BodyRejected(InputError):
    """A request body refused before parsing: ``status`` is the HTTP status, ``kind`` the error type."""

    def __init__(self, message: str, *, status: int, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _too_large(size: str) -> BodyRejected:
    return BodyRejected(
        f"the request body is {size} bytes; at most {MAX_BODY_BYTES} are accepted",
        status=413,
        kind="body_too_large",
    )


async def read_body(receive: Receive, headers: Mapping[str, str], *, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body of the request, or ``BodyRejected`` (413) once it is longer than ``limit`` bytes."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        await _drain(receive, int(declared))
        raise _too_large(declared)
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away
        chunk = message.get("body", b"")
        size += len(chunk)
        more = bool(message.get("more_body", False))
        if size > limit:
            if more:
                await _drain(receive, DRAIN_BYTES)
            raise _too_large(f"more than {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


async def _drain(receive: Receive, most: int) -> None:
    """Read and drop what is left of the body, up to ``most`` bytes."""
    dropped = 0
    while dropped < most:
        message: Message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
        dropped += len(message.get("body", b""))


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the already read ``body`` to an app, then passes on what follows."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``; ``BodyRejected`` (400) for text that is not JSON, or that nests deeper
    than ``MAX_DEPTH`` or has a key longer than ``MAX_KEY_CHARS``."""
    value = load_json(body)
    check_shape(value)
    return value


def load_json(body: bytes) -> Any:
    """The JSON value of ``body`` (nested a few hundred levels at most); ``BodyRejected`` (400) otherwise."""
    try:
        return json.loads(body, parse_constant=_no_constant)
    except RecursionError as exc:
        raise _invalid(f"the JSON body nests deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:  # also a body that is not UTF-8
        raise _invalid(f"the body is not JSON: {str(exc)[:200]}") from exc


def _invalid(message: str) -> BodyRejected:
    return BodyRejected(message, status=400, kind="invalid_arguments")


def check_shape(value: Any) -> None:
    """``BodyRejected`` (400) when ``value`` nests deeper than ``MAX_DEPTH`` or has an overlong key."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise _invalid(f"the JSON body nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
            continue
        for key, child in item.items():
            if len(key) > MAX_KEY_CHARS:
                raise _invalid(f"a key of {len(key)} characters; keys have at most {MAX_KEY_CHARS}")
            stack.append((child, depth + 1))
