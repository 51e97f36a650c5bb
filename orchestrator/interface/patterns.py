"""Regular expressions the agent supplies, compiled by RE2 so that matching takes time linear in the text.

Python's ``re`` backtracks: a pattern such as ``(.|.)*\\x00`` takes time exponential in the line length,
in C code that holds the GIL, which would freeze every thread of the runner. RE2 has no backreferences or
lookaround; a pattern that needs them is refused when it is compiled, never run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import re2

from orchestrator.errors import InputError

# RE2 compiles within this much memory or refuses the pattern (e.g. deeply nested counted repetitions).
MAX_PROGRAM_BYTES = 8 << 20


class PatternError(InputError):
    """A regular expression RE2 does not accept."""


class Match(Protocol):
    def group(self, index: int = 0) -> str | None: ...


class Matcher(Protocol):
    def search(self, text: str) -> Match | None: ...

    def fullmatch(self, text: str) -> Match | None: ...

    def finditer(self, text: str) -> Iterator[Match]: ...


def compile_pattern(text: str, *, ignore_case: bool = False) -> Matcher:
    """``text`` compiled by RE2; ``PatternError`` says why a pattern is refused."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # a refused pattern is the agent's input error, not a log line of ours
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        compiled: Matcher = re2.compile(text, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        reason = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        raise PatternError(f"{text!r} is not a regular expression RE2 accepts: {reason}") from exc
    return compiled
