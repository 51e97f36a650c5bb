"""What the journal keeps of a tool call: its arguments, result and reasons as JSON cut to bounded sizes, so
no argument an agent sends makes a journal record large. Pure functions (no side effects)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue, ValidationError

RESULT_CHARS = 500  # the journal keeps a short summary of each result, not the whole answer
ARG_CHARS = 4000
ARG_KEYS = 50
NAME_CHARS = 120
REASON_CHARS = 2000
MAX_ERRORS = 10


def short(text: str, limit: int = NAME_CHARS) -> str:
    """``text``, or its first ``limit`` characters with a note of its length."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text)} characters]"


def summary(value: Any) -> str:
    """A result as the journal keeps it: its JSON, cut."""
    return short(json.dumps(value, sort_keys=True, default=str), RESULT_CHARS)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, default=str, allow_nan=False)
    except (ValueError, RecursionError) as exc:
        return json.dumps(f"<not journaled: {type(exc).__name__}>")


def journal_args(raw: Any) -> dict[str, JsonValue]:
    """The arguments as the journal keeps them: JSON values, long strings (diffs), keys and lists cut."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return {"_invalid": short(_json_text(raw), ARG_CHARS)}
    kept: dict[str, JsonValue] = {}
    for index, (key, value) in enumerate(raw.items()):
        if index == ARG_KEYS:
            kept["_left_out"] = f"{len(raw) - ARG_KEYS} more arguments"
            break
        text = _json_text(value)
        kept[short(str(key))] = json.loads(text) if len(text) <= ARG_CHARS else short(text, ARG_CHARS)
    return kept


def validation_message(exc: ValidationError) -> str:
    """What is wrong with the arguments: the first ``MAX_ERRORS`` problems, each cut."""
    errors = exc.errors()
    parts = [
        f"{short('.'.join(str(p) for p in e['loc'])) or 'arguments'}: {short(e['msg'], 400)}"
        for e in errors[:MAX_ERRORS]
    ]
    more = f"; and {len(errors) - MAX_ERRORS} more" if len(errors) > MAX_ERRORS else ""
    return "invalid arguments: " + "; ".join(parts) + more
