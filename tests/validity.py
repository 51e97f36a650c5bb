"""The validity matrix (docs/metrics.md, "Validity of the benchmark"): full-length marathons of the oracle,
the no-action agent and the runbook agent on every app over seeds 1-5, and the claims they must bear out.

- the oracle, which knows the ground truth, scores at least 90 on every app and seed: the alerts, probes and
  tools allow a near-perfect run, so a lower score is the benchmark's fault, not an agent's;
- the no-action agent scores 0 with a degradation level of 100 %: it is the baseline;
- the runbook agent lies strictly between: the benchmark separates a simple agent from both ends.

Used by ``make bench`` (tests/bench_validity.py) and by a test that ``make validity`` runs (it takes about
half an hour on two cores, so it is not part of every CI run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

APPS = ("online-boutique", "train-ticket", "astronomy-shop")
SEEDS = (1, 2, 3, 4, 5)
ORACLE_FLOOR = 90.0
WORKERS = 2


@dataclass(frozen=True)
class Cell:
    app: str
    seed: int
    agent: str
    score: float
    degradation: float
    faults: int
    wall_s: float
    bundle: Path = Path()


def run_cell(app: str, seed: int, agent: str, *, runs: Path) -> Cell:
    """One full-length marathon on the stepped twin, scored against the no-action baseline under ``runs``
    (computed alongside by the first run of an app and seed, then found there)."""
    command = [sys.executable, "-m", "orchestrator.cli", "run", "--app", app, "--seed", str(seed), "--agent",
               agent, "--runs", str(runs), "--quiet", "--no-register"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{agent} on {app} seed {seed} failed ({done.returncode}): {done.stderr[-1500:]}")
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    card = json.loads(Path(said["score"].split("  ", 1)[0]).read_text())
    return Cell(app, seed, agent, float(card["marathon_score"]), float(card["degradation_level"]),
                int(card["faults"]), wall, Path(said["bundle"]))  # fmt: skip


def run_matrix(
    runs: Path,
    *,
    apps: Iterable[str] = APPS,
    seeds: Iterable[int] = SEEDS,
    progress: Callable[[Cell], None] = lambda cell: None,
) -> list[Cell]:
    """Every app and seed with the no-action agent first (its run computes the baseline), then the oracle
    and the runbook agent, ``WORKERS`` marathons at a time."""
    pairs = [(app, seed) for app in apps for seed in seeds]
    cells: list[Cell] = []

    def one(job: tuple[str, int, str]) -> None:
        cell = run_cell(*job, runs=runs)
        cells.append(cell)
        progress(cell)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(one, [(app, seed, "noop") for app, seed in pairs]))
        list(pool.map(one, [(app, seed, agent) for agent in ("oracle", "runbook") for app, seed in pairs]))
    return sorted(cells, key=lambda c: (c.app, c.agent, c.seed))


def problems(cells: Iterable[Cell]) -> list[str]:
    """The claims of the module docstring that ``cells`` contradict, one line each (no side effects)."""
    by_key = {(c.app, c.seed, c.agent): c for c in cells}
    found: list[str] = []
    for (app, seed, agent), cell in sorted(by_key.items()):
        if agent == "oracle" and cell.score < ORACLE_FLOOR:
            found.append(f"oracle on {app} seed {seed}: {cell.score:.1f} < {ORACLE_FLOOR:g}")
        if agent == "noop" and (cell.score != 0.0 or cell.degradation != 100.0):
            level = f"degradation {cell.degradation:.1f} %"
            found.append(f"noop on {app} seed {seed}: score {cell.score:.1f}, {level}")
        if agent == "runbook":
            low, high = by_key.get((app, seed, "noop")), by_key.get((app, seed, "oracle"))
            if low is None or high is None or not low.score < cell.score < high.score:
                ends = f"noop {low.score if low else '-'}, oracle {high.score if high else '-'}"
                found.append(f"runbook on {app} seed {seed}: {cell.score:.1f} not strictly between ({ends})")
    return found


def table(cells: Iterable[Cell]) -> list[str]:
    """One line per app and agent: the score of each seed, then the degradation levels (no side effects)."""
    rows: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        rows.setdefault((cell.app, cell.agent), []).append(cell)
    lines = []
    for (app, agent), found in sorted(rows.items()):
        found.sort(key=lambda c: c.seed)
        scores = " / ".join(f"{c.score:.1f}" for c in found)
        levels = " / ".join(f"{c.degradation:.1f}" for c in found)
        seeds = ",".join(str(c.seed) for c in found)
        lines.append(f"{agent:8} {app:16} seeds {seeds}: score {scores}; degradation % {levels}")
    return lines
