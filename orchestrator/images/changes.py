"""A code fault's source change applied to the service's source: exactly one occurrence of ``before``."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from orchestrator.catalog.faults import CodeFault
from orchestrator.errors import InputError, Problem


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def changed_text(entry: CodeFault, *, text: str, path: str) -> str:
    """``text`` with the one occurrence of the entry's ``before`` replaced by its ``after``.

    No side effects. ``path`` names the file in the refusal: ``before`` found no time or more than once.
    """
    change = entry.inject.source
    starts = [match.start() for match in re.finditer(re.escape(change.before), text)]
    if len(starts) == 1:
        return text.replace(change.before, change.after, 1)
    if starts:
        lines = " and ".join(str(text.count("\n", 0, start) + 1) for start in starts[:2])
        why = f"occurs {len(starts)} times (lines {lines}); exactly one is needed"
        raise _refusal(entry, path=path, field="inject.source.before", why=why)
    why = "not found in the file"
    if _loose(change.before) in _loose(text):
        why += " (it differs only in whitespace: tabs or spaces?)"
    raise _refusal(entry, path=path, field="inject.source.before", why=why)


def service_folder(entry: CodeFault, *, checkout: Path) -> Path:
    """The folder of the changed file's service, relative to the checkout: the nearest one, from the file's
    folder up to the checkout, that holds a Dockerfile. Refused when the file or the Dockerfile is missing."""
    relative = Path(entry.inject.source.file)
    path = checkout / relative
    if relative.is_absolute() or ".." in relative.parts or not path.is_file():
        why = f"no such file in the checkout {checkout}"
        raise _refusal(entry, path=str(relative), field="inject.source.file", why=why)
    for folder in relative.parents:
        if (checkout / folder / "Dockerfile").is_file():
            return folder
    why = f"no Dockerfile in {relative.parent} or any folder above it in the checkout {checkout}"
    raise _refusal(entry, path=str(relative), field="inject.source.file", why=why)


def _loose(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _refusal(entry: CodeFault, *, path: str, field: str, why: str) -> InputError:
    return InputError(f"entry {entry.id}", [Problem(path, None, field, "", why)])
