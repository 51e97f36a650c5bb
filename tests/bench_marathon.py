"""A full marathon as ``make marathon SEED=42`` runs it: Online Boutique on the stepped twin, 60 arrivals over
90 simulated minutes, 45 invocations of the runbook agent, sealed, verified and scored against a no-action
baseline computed alongside (target: under 60 s wall on 2 cores). A second run with an agent that returns
at once shows what the runner itself costs per boundary.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARATHON = [
    sys.executable,
    "-m",
    "orchestrator.cli",
    "run",
    "--app",
    "online-boutique",
    "--seed",
    "42",
    "--quiet",
]
QUERY_PHASES = ("observe", "artifacts")


def _run(extra: list[str], runs: Path) -> tuple[float, float, dict[str, object]]:
    """Wall and CPU seconds (this child and everything it started) of one ``marathon run``, and its runtime
    facts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*MARATHON, *extra, "--runs", str(runs)], capture_output=True, text=True, check=False, env=os.environ
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"marathon run failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    bundle = next(line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith("bundle: "))
    runtime = json.loads((Path(bundle) / "data" / "runtime.json").read_text())
    score = json.loads((Path(bundle).parent / "score.json").read_text())
    runtime["score"] = score["marathon_score"]
    return wall, cpu, runtime


def bench() -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        wall, cpu, runtime = _run(["--agent", "runbook"], runs)
        rows.append(("make marathon SEED=42 (runbook, cold baseline)", f"{wall:.1f} s wall, {cpu:.1f} s CPU",
                     "< 60 s on 2 cores"))  # fmt: skip
        phases = runtime["phases_s"]
        assert isinstance(phases, dict)
        rows.append(("  of which the agent's 45 invocations", f"{phases.get('agent', 0.0):.1f} s", ""))
        rows.append(("  Marathon-Score", f"{runtime['score']}", ""))
        wall, cpu, runtime = _run(["--agent-cmd", "true", "--no-baseline"], runs)
        phases = runtime["phases_s"]
        assert isinstance(phases, dict)
        queries = sum(float(phases.get(name, 0.0)) for name in QUERY_PHASES)
        rows.append(("45 invocations of a no-op command, no baseline", f"{wall:.1f} s wall, {cpu:.1f} s CPU",
                     "well under 60 s"))  # fmt: skip
        rows.append(("  twin advance", f"{float(phases.get('advance', 0.0)):.1f} s", ""))
        rows.append(("  queries per boundary (rules, probes, samples)", f"{1000 * queries / 45:.0f} ms", ""))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(" | ".join(row))
