"""The validity matrix (tests/validity.py): the oracle, the no-action agent and the runbook agent at full
length on every app over seeds 1-5. One row per app and agent; the oracle's row passes when its lowest score
is at least 90, the no-action agent's when every score is 0 at 100 % degradation, the runbook agent's when
every score lies strictly between the two ends of its seed."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench_alerts import noise_figure
from tests.benchkit import Figure
from tests.validity import APPS, ORACLE_FLOOR, SEEDS, WORKERS, Cell, problems, run_matrix


def _shown(cells: list[Cell]) -> str:
    return " / ".join(f"{c.score:.1f}" for c in cells)


def bench() -> list[Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        cells = run_matrix(
            Path(tmp) / "runs",
            progress=lambda c: print(f"  {c.agent} {c.app} seed {c.seed}: {c.score:.1f} ({c.wall_s:.0f} s)",
                                     file=sys.stderr, flush=True),
        )  # fmt: skip
        # The noise is read from the no-action bundles, which live only as long as the directory.
        noop = [c.bundle for c in cells if c.agent == "noop"]
        noise = noise_figure(noop, f"{len(noop)}: the 3 apps x seeds {','.join(map(str, SEEDS))}")
    wall = time.perf_counter() - started
    wrong = problems(cells)
    rows: list[Any] = []
    seeds = ",".join(map(str, SEEDS))
    for app in APPS:
        for agent in ("oracle", "noop", "runbook"):
            found = sorted((c for c in cells if c.app == app and c.agent == agent), key=lambda c: c.seed)
            name = f"{agent} on {app}, seeds {seeds}"
            if agent == "oracle":
                lowest = min(c.score for c in found)
                shown = _shown(found)
                rows.append(Figure(f"{name} (lowest)", lowest, "", ORACLE_FLOOR, shown=shown, at_least=True))
                continue
            bad = sum(1 for line in wrong if line.startswith(f"{agent} on {app} "))
            claim = "at 0 with 100 % degradation" if agent == "noop" else "strictly between noop and oracle"
            levels = " / ".join(f"{c.degradation:.0f} %" for c in found)
            shown = f"{_shown(found)} (degradation {levels}); {bad} not {claim}"
            rows.append(Figure(f"{name}: seeds not {claim}", bad, "", 1, shown=shown))
    rows.append(noise)
    rows.append((f"{len(cells)} full-length marathons, {WORKERS} at a time", f"{wall:.0f} s wall", ""))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
