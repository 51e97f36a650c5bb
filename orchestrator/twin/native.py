"""The twin's compiled simulation: which modules ``make setup`` compiled with mypyc, and the check that keeps
a module that changed after it was compiled from running in its old form.

``tools/compile_native.py`` compiles the modules the simulation spends its time in (the app model, the
controllers, the cluster and its store) to C extension modules beside their sources, and lists each source
with the file built from it in ``native.json``. Python imports an extension module before the source of the
same name, so ``drop_stale``, run when ``orchestrator.twin`` is first imported, removes every file built
when any listed source is newer than the manifest, which the build writes last (compiled modules call one
another directly, so one stale module makes the whole build stale). The twin then runs from its sources,
as it does where nothing was compiled, with the same results: compiling changes how fast the steps run, not
what they do.
"""

from __future__ import annotations

import contextlib
import json
import os
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

# The package root's parent: the paths in the manifest are relative to it (``orchestrator/twin/...``).
ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("native.json")
# mypyc's shared library of the compiled modules, an extension module of this package.
GROUP = "orchestrator.twin._native"


def built_path(module: str) -> str:
    """The path, relative to ``ROOT``, of the extension module compiled for ``module`` (no side effects)."""
    return module.replace(".", "/") + EXTENSION_SUFFIXES[0]


def read_manifest(manifest: Path = MANIFEST) -> dict[str, list[str]] | None:
    """``{"sources": [...], "built": [...]}`` of the last compilation (paths relative to ``ROOT``; both empty
    when it failed), None when there was none; ``ValueError`` when the file is not such a listing."""
    try:
        found = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if not isinstance(found, dict) or not all(isinstance(found.get(k), list) for k in ("sources", "built")):
        raise ValueError(f"{manifest}: not a listing of sources and built files")
    return {key: [str(path) for path in found[key]] for key in ("sources", "built")}


def drop_stale(root: Path = ROOT, manifest: Path = MANIFEST) -> str | None:
    """Remove every compiled file, and the manifest, when a listed source changed after the compilation, a
    built file is missing or the manifest cannot be read; return a line saying so, or None when the
    compiled modules are current or there are none."""
    try:
        listed = read_manifest(manifest)
        made = manifest.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        listed, made = None, -1
    if listed is not None:
        changed = [source for source in listed["sources"] if _mtime(root / source) > made]
        missing = [built for built in listed["built"] if _mtime(root / built) < 0]
        if not changed and not missing:
            return None
        why = f"{changed[0]} changed since" if changed else f"{missing[0]} is missing"
        built = [root / path for path in listed["built"]]
    else:  # what it listed is unknown: every extension module of the package goes
        why = f"{manifest.name} is unreadable"
        built = list(manifest.parent.rglob("*" + EXTENSION_SUFFIXES[0]))
    for path in built:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(manifest)
    return f"marathon: the twin was compiled, but {why}; it runs from source until `make setup` compiles it"


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return -1
