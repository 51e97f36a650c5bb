"""Admission of the whole catalog as ``marathon catalog admit`` does it (each entry alone on a fresh twin,
two at a time), into a copy of the project: its wall time against the 15-minute target, and whether it
reproduces the committed ``fault_catalog/<app>/admission.json`` (the same verdicts and rules per entry).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.loading import default_root
from tests.benchkit import Figure

LIMIT_S = 15 * 60.0
COPIED = ("fault_catalog", "manifests", "alert_rules")


def _verdicts(path: Path) -> dict[str, tuple[bool, tuple[str, ...]]]:
    found = json.loads(path.read_text(encoding="utf-8"))
    return {e["id"]: (bool(e["admitted"]), tuple(e.get("rules_fired", ()))) for e in found["entries"]}


def bench() -> list[Any]:
    root = default_root()
    rows: list[Any] = []
    total_s = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-admission-") as tmp:
        copy = Path(tmp)
        for name in COPIED:
            shutil.copytree(root / name, copy / name)
        for app in app_names(root=root):
            committed = _verdicts(root / "fault_catalog" / app / "admission.json")
            (copy / "fault_catalog" / app / "admission.json").unlink()
            command = [
                sys.executable,
                "-m",
                "orchestrator.cli",
                "catalog",
                "admit",
                "--app",
                app,
                "--root",
                str(copy),
            ]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            total_s += wall
            if done.returncode != 0:
                raise RuntimeError(f"admission of {app} failed ({done.returncode}): {done.stderr[-1500:]}")
            fresh = _verdicts(copy / "fault_catalog" / app / "admission.json")
            admitted = sum(1 for verdict, _ in fresh.values() if verdict)
            differ = sorted(i for i in committed.keys() | fresh.keys() if committed.get(i) != fresh.get(i))
            rows.append(
                Figure(
                    f"{app}: admission of {len(fresh)} entries, 2 at a time",
                    wall,
                    "s",
                    shown=f"{wall:.0f} s, {admitted} admitted; {len(differ)} differ from the committed file"
                    + (f" ({', '.join(differ[:4])})" if differ else ""),
                )
            )
    rows.append(
        Figure(
            "admission of the whole catalog",
            total_s,
            "s",
            LIMIT_S,
            shown=f"{total_s:.0f} s ({total_s / 60:.1f} min)",
        )
    )
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
