"""Identifier spelling for generated source: words of a name, and the cases languages write them in.

Everything here is a pure function of its arguments; ``pick`` is a stable choice (SHA-256, not ``hash``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z0-9]+|[A-Z]+")
_VERBS = ("get", "list", "fetch", "find", "query")


def words(text: str) -> list[str]:
    """The lower-case words of a name in any case: ``GetSupportedCurrencies`` -> get, supported, currencies"""
    return [part.lower() for part in _PARTS.findall(text)]


def snake(parts: Sequence[str]) -> str:
    return "_".join(parts)


def kebab(parts: Sequence[str]) -> str:
    return "-".join(parts)


def pascal(parts: Sequence[str]) -> str:
    return "".join(part[:1].upper() + part[1:] for part in parts)


def camel(parts: Sequence[str]) -> str:
    text = pascal(parts)
    return text[:1].lower() + text[1:]


def upper(parts: Sequence[str]) -> str:
    return "_".join(part.upper() for part in parts)


def stem(service: str) -> list[str]:
    """The words that name what a service is about: ``ts-inside-payment-service`` -> inside, payment."""
    parts = words(service)
    if len(parts) > 1 and parts[0] == "ts":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] == "service":
        parts = parts[:-1]
    if len(parts) == 1 and parts[0].endswith("service") and len(parts[0]) > len("service"):
        parts = [parts[0].removesuffix("service")]
    return parts


def without_verb(parts: Sequence[str]) -> list[str]:
    """A method's words without a leading read verb, when more remain: get, quote -> quote."""
    return list(parts[1:]) if len(parts) > 1 and parts[0] in _VERBS else list(parts)


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def pick(key: str, count: int) -> int:
    """A stable index in ``range(count)`` for ``key``."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count if count > 0 else 0


def unique(name: str, taken: dict[str, object]) -> str:
    """``name``, or ``name2``, ``name3``... the first not in ``taken``."""
    if name not in taken:
        return name
    index = 2
    while f"{name}{index}" in taken:
        index += 1
    return f"{name}{index}"
