"""Applying a unified diff to one file's text, as ``patch`` would, with reasons when it does not apply.

Pure functions (no side effects). A hunk's old lines must match exactly (trailing whitespace aside); the
stated line number is a hint: the hunk applies at the nearest place its old lines match, as ``patch``
allows an offset. File headers (``---``/``+++``) are optional; when present they must name the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orchestrator.errors import InputError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(InputError):
    """A diff is malformed or does not apply to the file it names."""


@dataclass
class Hunk:
    old_start: int
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)

    @property
    def old(self) -> list[str]:
        return [text for op, text in self.lines if op != "+"]

    @property
    def new(self) -> list[str]:
        return [text for op, text in self.lines if op != "-"]


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_diff(diff: str, *, path: str) -> list[Hunk]:
    """The hunks of ``diff``, a unified diff of the one file ``path``."""
    hunks: list[Hunk] = []
    for number, line in enumerate(diff.splitlines(), start=1):
        if line.startswith(("--- ", "+++ ")) and (not hunks or _complete(hunks[-1])):
            named = _strip_prefix(line[4:])
            if named not in ("/dev/null", path.lstrip("/")) and named.lstrip("/") != path.lstrip("/"):
                raise DiffError(f"diff line {number}: the diff is for {named!r}, not {path!r}")
            continue
        if line.startswith("@@"):
            match = _HUNK.match(line)
            if match is None:
                raise DiffError(f"diff line {number}: malformed hunk header {line!r}")
            hunks.append(Hunk(old_start=int(match.group(1))))
            continue
        if not hunks:
            if line.startswith(("diff ", "index ", "new file", "deleted file")) or not line.strip():
                continue
            raise DiffError(f"diff line {number}: expected a hunk header '@@ -l,n +l,n @@', found {line!r}")
        if line.startswith("\\"):
            continue  # "\ No newline at end of file"
        op, text = (line[:1], line[1:]) if line else (" ", "")
        if op not in (" ", "-", "+"):
            raise DiffError(
                f"diff line {number}: a hunk line must start with ' ', '-' or '+', found {line!r}"
            )
        hunks[-1].lines.append((op, text))
    if not hunks:
        raise DiffError("the diff has no hunks ('@@ -l,n +l,n @@' headers)")
    for index, hunk in enumerate(hunks, start=1):
        if not any(op != " " for op, _ in hunk.lines):
            raise DiffError(f"hunk {index} changes nothing")
    return hunks


def _complete(hunk: Hunk) -> bool:
    # A '--- ' line inside a hunk is a removed line starting with '-- ', not a new file header; a header
    # can only follow a hunk once the hunk has lines.
    return bool(hunk.lines)


def _matches(lines: list[str], at: int, old: list[str]) -> bool:
    if at < 0 or at + len(old) > len(lines):
        return False
    return all(lines[at + i].rstrip() == text.rstrip() for i, text in enumerate(old))


def _locate(lines: list[str], hunk: Hunk, *, shift: int) -> int | None:
    old = hunk.old
    stated = hunk.old_start - 1 + shift if old else hunk.old_start + shift
    hint = min(max(stated, 0), len(lines))
    for offset in range(len(lines) + 1):
        for at in (hint - offset, hint + offset):
            if _matches(lines, at, old):
                return at
    return None


def apply_diff(text: str, diff: str, *, path: str) -> str:
    """``text`` with ``diff`` applied; ``DiffError`` names the first hunk that does not apply and why."""
    lines = text.splitlines()
    trailing_newline = text.endswith("\n")
    shift = 0
    for index, hunk in enumerate(parse_diff(diff, path=path), start=1):
        at = _locate(lines, hunk, shift=shift)
        if at is None:
            first = hunk.old[0] if hunk.old else ""
            raise DiffError(
                f"hunk {index} (at line {hunk.old_start}) does not apply to {path}: its "
                f"{len(hunk.old)} context/removed lines, starting {first!r}, are not in the file"
            )
        lines[at : at + len(hunk.old)] = hunk.new
        shift = at - (hunk.old_start - 1) + len(hunk.new) - len(hunk.old)
    result = "\n".join(lines)
    return result + "\n" if trailing_newline or not text else result
