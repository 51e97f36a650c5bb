"""Compile the twin's simulation with mypyc: ``make setup`` runs this on the sources the Makefile lists.

Usage: python tools/compile_native.py SOURCE.py ...

Each source becomes a C extension module beside it, and mypyc's shared library of them all becomes
``orchestrator/twin/_native__mypyc``; ``orchestrator/twin/native.json`` lists the sources and the files
built (``orchestrator.twin.native`` removes them when a source changes later). What was built before is
removed first, so a build that fails leaves the twin running from source: this prints one line saying so
and exits 0 (the benchmark is then slower, not wrong). The compiler's own output goes to
``build/native/build.log``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

_TWIN = Path(__file__).resolve().parents[1] / "orchestrator" / "twin"


def _remove_previous() -> None:
    """Every extension module of the twin's package and the manifest, before anything imports them (else the
    package's own check would find them stale and say so)."""
    for path in _TWIN.rglob("*" + EXTENSION_SUFFIXES[0]):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_TWIN / "native.json")


_remove_previous()

from orchestrator.twin.native import GROUP, MANIFEST, ROOT, built_path  # noqa: E402

BUILD_DIR = ROOT / "build" / "native"


def _module(source: str) -> str:
    path = Path(source).with_suffix("")
    return ".".join(path.parts)


def _build(sources: list[str], log: io.TextIOBase) -> None:
    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        extensions = mypycify(sources, opt_level="3", group_name=GROUP, target_dir=str(BUILD_DIR / "c"))
        setup(
            name="marathon-twin-native",
            ext_modules=extensions,
            script_name="compile_native.py",
            script_args=["build_ext", "--inplace", "--build-temp", str(BUILD_DIR / "temp"),
                         "--parallel", str(os.cpu_count() or 1)],
        )  # fmt: skip


def _short(exc: BaseException) -> str:
    """What a failed build says, in one line of at most 160 characters (the log has the rest)."""
    lines = str(exc).strip().splitlines()
    text = lines[-1] if lines else type(exc).__name__
    if type(exc).__name__ == "CompileError" or "Command '[" in text:  # the whole compiler command line
        return "the C compiler failed"
    return text if len(text) <= 160 else text[:157] + "..."


def main(argv: list[str]) -> int:
    sources = sorted(set(argv))
    if not sources:
        print("usage: python tools/compile_native.py SOURCE.py ...", file=sys.stderr)
        return 2
    for source in sources:
        if not source.startswith("orchestrator/twin/") or not (ROOT / source).is_file():
            print(f"compile_native: {source}: not a source file of orchestrator/twin", file=sys.stderr)
            return 2
        if source.endswith("/__init__.py"):  # a compiled package is given a wrong __path__
            print(f"compile_native: {source}: packages stay uncompiled", file=sys.stderr)
            return 2
    os.chdir(ROOT)
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    print(f"compiling the twin's simulation with mypyc ({len(sources)} modules, about a minute)", flush=True)
    began = time.monotonic()
    built = [built_path(_module(source)) for source in sources] + [built_path(GROUP + "__mypyc")]
    with open(BUILD_DIR / "build.log", "w", encoding="utf-8") as log:
        try:
            _build(sources, log)
            failure = next((path for path in built if not (ROOT / path).is_file()), None)
            error = None if failure is None else f"{failure} was not built"
        except (Exception, SystemExit) as exc:  # mypy's or the compiler's refusal, as one short line
            error = _short(exc)
    if error is not None:
        for path in built:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ROOT / path)
        MANIFEST.write_text(json.dumps({"sources": [], "built": []}) + "\n", encoding="utf-8")
        print(
            f"compile_native: not compiled ({error}; build/native/build.log); the twin runs from source",
            file=sys.stderr,
        )
        return 0
    MANIFEST.write_text(json.dumps({"sources": sources, "built": built}, indent=1) + "\n", encoding="utf-8")
    print(f"compiled in {time.monotonic() - began:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
