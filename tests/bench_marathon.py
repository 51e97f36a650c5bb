"""Whole marathons as ``make marathon`` runs them: each app on the stepped twin with seed 42 and the runbook
agent at the default length and load (the app's published_schedule: its arrivals over 60 simulated minutes
and its cap, 30 more minutes of observation, 45 invocations), sealed, verified and scored. The first run of
an app computes its no-action baseline alongside (the second core); the figure is the median of three runs
after it, which find the baseline cached.

Also: a run with twice the faults and twice the duration against the base run made just before and just
after it (it should cost about twice as much, not more), the peak resident memory of a marathon, and the
command line's own costs (``--help``, ``score``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.schedule import default_load
from tests.benchkit import Figure, median_wall

APPS = (("online-boutique", 20.0), ("train-ticket", 30.0), ("astronomy-shop", 20.0))
ROUNDS = 3
SCALE_LIMIT = 2.2
DOUBLE = ["--faults", str(2 * default_load("online-boutique")[0]), "--injection-period", "7200",
          "--observation-period", "3600"]  # fmt: skip
CLI = [sys.executable, "-m", "orchestrator.cli"]
MARATHON = Path(sys.executable).with_name("marathon")


def _command(app: str, runs: Path, *extra: str) -> list[str]:
    return [*CLI, "run", "--app", app, "--seed", "42", "--agent", "runbook", "--runs", str(runs), "--quiet",
            "--no-register", *extra]  # fmt: skip


def _run(command: list[str]) -> tuple[float, Path, float]:
    """Wall seconds of one run, its run directory, and the peak RSS in MB of the largest process of its tree
    (the runner, Prometheus, the baseline's runner or the agent's template)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=os.environ)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise RuntimeError(f"marathon run failed ({process.returncode}): {stderr[-2000:]}")
    bundle = next(line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith("bundle: "))
    return wall, Path(bundle).parent, usage.ru_maxrss / 1024


def _runtime(run_dir: Path) -> dict[str, Any]:
    runtime: dict[str, Any] = json.loads((run_dir / "bundle" / "data" / "runtime.json").read_text())
    return runtime


def _phases(runtime: dict[str, Any]) -> str:
    phases = runtime.get("phases_s", {})
    shown = ", ".join(f"{name} {float(phases[name]):.1f}" for name in sorted(phases))
    return f"{shown} (wall s)"


def _app_rows(app: str, limit: float, runs: Path) -> tuple[list[Any], Path, float]:
    cold, _, _ = _run(_command(app, runs))
    walls, last, rss = [], Path(), 0.0
    for _ in range(ROUNDS):
        wall, last, peak = _run(_command(app, runs))
        walls.append(wall)
        rss = max(rss, peak)
    median = statistics.median(walls)
    runtime = _runtime(last)
    rows: list[Any] = [
        Figure(
            f"{app}: marathon, cached baseline (median of {ROUNDS})",
            median,
            "s",
            limit,
            shown=f"{median:.1f} s ({min(walls):.1f}-{max(walls):.1f})",
        ),  # fmt: skip
        Figure(f"{app}: first run, baseline computed alongside", cold, "s"),
        (f"{app}:   phases of the last run", _phases(runtime), ""),
    ]
    return rows, last, rss


def _rss_row(app: str, run_dir: Path, tree_mb: float) -> Figure:
    runner = float(_runtime(run_dir).get("peak_rss_mb", 0.0))
    shown = f"{runner:.0f} MB the runner; {tree_mb:.0f} MB the largest process of its tree"
    return Figure(f"{app}: peak RSS of a marathon", runner, "MB", shown=shown)


def _scale_row(runs: Path) -> Figure:
    """The doubled run over the base, the base run just before and just after it: the speed of a shared
    machine drifts over minutes, and base runs from earlier in the bench would take that drift for cost."""
    before, _, _ = _run(_command("online-boutique", runs))
    double, _, _ = _run(_command("online-boutique", runs, *DOUBLE, "--no-baseline"))
    after, _, _ = _run(_command("online-boutique", runs))
    base = (before + after) / 2
    return Figure(
        "online-boutique: 2x faults and 2x duration, wall over the base",
        double / base,
        "x",
        SCALE_LIMIT,
        shown=f"{double / base:.2f}x ({double:.1f} s vs {before:.1f} s before it and {after:.1f} s after)",
    )


def bench() -> list[Any]:
    rows: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        ob_run = Path()
        for app, limit in APPS:
            found, last, tree_mb = _app_rows(app, limit, runs)
            rows += found
            rows.append(_rss_row(app, last, tree_mb))
            if app == "online-boutique":
                ob_run = last
        rows.append(_scale_row(runs))
        score, walls = median_wall([str(MARATHON), "score", str(ob_run / "bundle")], rounds=3)
        rows.append(Figure("marathon score BUNDLE (median of 3)", score, "s", 1.0))
    helped, _ = median_wall([str(MARATHON), "--help"], rounds=5)
    rows.append(Figure("marathon --help (median of 5)", helped, "s", 0.5))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
