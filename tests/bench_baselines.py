"""The baselines side by side: noop, runbook, alert correlation, ReAct and RAG (both on the scripted fake
model, which answers every turn without a tool call) and the oracle, on the three apps with seeds 1-3.

Runs are short so the matrix fits a 2-core machine: 8 fault arrivals over 16 simulated minutes, 4 more of
observation, an invocation every 120 s (10 invocations). Each row gives an agent's Marathon-Score on one app
for seeds 1, 2 and 3, and their mean; the last rows give the wall time. The no-action baseline of every app
and seed is computed once, by its noop run, and shared by the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

APPS = ("online-boutique", "astronomy-shop", "train-ticket")
SEEDS = (1, 2, 3)
AGENTS = ("noop", "runbook", "correlation", "react", "rag", "oracle")
MODEL_AGENTS = ("react", "rag")
SHORT = ["--faults", "8", "--injection-period", "960", "--observation-period", "240", "--delta", "120"]
WORKERS = 2


def _score(app: str, seed: int, agent: str, *, runs: Path, model_url: str, env: dict[str, str]) -> float:
    command = [sys.executable, "-m", "orchestrator.cli", "run", "--app", app, "--seed", str(seed), "--agent",
               agent, *SHORT, "--runs", str(runs), "--quiet"]  # fmt: skip
    if agent in MODEL_AGENTS:
        command += ["--model-url", model_url]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{agent} on {app} seed {seed} failed ({done.returncode}): {done.stderr[-1500:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("score: "))
    path = Path(line.split(": ", 1)[1].split("  ", 1)[0])
    return float(json.loads(path.read_text())["marathon_score"])


def bench() -> list[tuple[str, str, str]]:
    from tests.agents.fakeopenai import UPSTREAM_KEY, fake_openai

    scores: dict[tuple[str, int, str], float] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, fake_openai([]) as (model_url, script):
        runs = Path(tmp) / "runs"
        env = {**os.environ, "MARATHON_UPSTREAM_KEY": UPSTREAM_KEY}

        def one(cell: tuple[str, int, str]) -> None:
            scores[cell] = _score(*cell, runs=runs, model_url=model_url, env=env)

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            # The noop runs first, one per app and seed: each computes the baseline the others share.
            list(pool.map(one, [(app, seed, "noop") for app in APPS for seed in SEEDS]))
            others = [(app, seed, agent) for agent in AGENTS[1:] for app in APPS for seed in SEEDS]
            list(pool.map(one, others))
        model_calls = len(script.served)
    wall = time.perf_counter() - started
    rows: list[tuple[str, str, str]] = []
    for agent in AGENTS:
        for app in APPS:
            values = [scores[(app, seed, agent)] for seed in SEEDS]
            shown = " / ".join(f"{v:.1f}" for v in values)
            mean = sum(values) / len(values)
            rows.append((f"{agent} on {app} (seeds 1/2/3)", f"{shown}  mean {mean:.1f}", ""))
    cells = len(APPS) * len(SEEDS) * len(AGENTS)
    rows.append((f"{cells} short marathons, {WORKERS} at a time", f"{wall:.0f} s wall", ""))
    rows.append(("  model calls served by the scripted fake (react, rag)", str(model_calls), ""))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(" | ".join(row))
