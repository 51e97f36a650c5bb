"""Bench of the alert pack: the evaluator over a synthetic 90-minute run in a real Prometheus, and the noise
of the pack in no-action marathons (the share of alert firings that no injected fault explains)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.bundle.reader import read_bundle
from orchestrator.score.attribution import attribute, latest_alerts, scored_faults
from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import start_prometheus
from tests.benchkit import Figure
from tests.telemetry.synthetic import Fault, generate
from tests.telemetry.telemetry_support import push

# The no-action marathons whose alerts measure the pack's noise: seeds nobody tuned the rules on.
NOISE_APPS = ("online-boutique", "train-ticket", "astronomy-shop")
NOISE_SEEDS = (1, 2)
NOISE_LIMIT_PCT = 2.0
CLI = [
    sys.executable,
    "-m",
    "orchestrator.cli",
    "run",
    "--agent",
    "noop",
    "--quiet",
    "--no-register",
    "--no-baseline",
]
ORIGIN = 1_767_225_600.0
MINUTES = 90
BOUNDARY = 120.0  # the runner's default agent cadence


def unattributed(bundle: Path) -> tuple[int, int]:
    """Alert firings of a sealed run, and how many of them are attributable to no injected fault (as the
    scorer attributes them, docs/metrics.md "Attribution")."""
    found = read_bundle(bundle)
    alerts = latest_alerts(found.alerts)
    explained = attribute(alerts, scored_faults(found))
    return len(alerts), sum(1 for alert_id in alerts if not explained.of(alert_id))


def noise_figure(bundles: list[Path], what: str) -> Figure:
    """The share of unattributable firings over the sealed no-action runs ``bundles``."""
    total = unexplained = 0
    for bundle in bundles:
        fired, alone = unattributed(bundle)
        total, unexplained = total + fired, unexplained + alone
    share = 100.0 * unexplained / total if total else 0.0
    return Figure(
        f"unattributable alert firings, no-action runs ({what})",
        share,
        "%",
        NOISE_LIMIT_PCT,
        shown=f"{share:.2f} % ({unexplained} of {total})",
    )


def noise(runs: Path) -> Figure:
    """The noise of the pack over no-action marathons of every app on ``NOISE_SEEDS``."""
    bundles = []
    for app in NOISE_APPS:
        for seed in NOISE_SEEDS:
            command = [*CLI, "--app", app, "--seed", str(seed), "--runs", str(runs)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"marathon run failed ({done.returncode}): {done.stderr[-2000:]}")
            bundles.append(
                Path(
                    next(
                        line.split(": ", 1)[1]
                        for line in done.stdout.splitlines()
                        if line.startswith("bundle: ")
                    )
                )
            )
    return noise_figure(bundles, f"{len(NOISE_APPS)} apps x seeds {NOISE_SEEDS}")


def bench() -> list[tuple[str, str, str] | Figure]:
    pack = load_rule_pack()
    faults = (
        Fault("cartservice", start=1800, end=2700, error_ratio=0.3),
        Fault("checkoutservice", start=3600, end=4200, restart_every=60),
    )
    series = generate(origin=ORIGIN, minutes=MINUTES, seed=42, faults=faults)
    samples = sum(len(points) for points in series.values())
    with tempfile.TemporaryDirectory() as run_dir, start_prometheus(Path(run_dir)) as server:
        started = time.perf_counter()
        push(server, series)
        pushed = time.perf_counter() - started
        evaluator = AlertEvaluator(pack, PrometheusQuerier(server.url), start=ORIGIN)
        boundaries = int(MINUTES * 60 / BOUNDARY)
        started = time.perf_counter()
        for k in range(1, boundaries + 1):
            evaluator.evaluate(until=ORIGIN + BOUNDARY * k)
        evaluated = time.perf_counter() - started
    rows: list[tuple[str, str, str] | Figure] = [
        (
            f"evaluate {len(pack.rules)} rules over a {MINUTES}-min run ({boundaries} boundaries)",
            f"{evaluated:.2f} s",
            "< 10 s",
        ),
        ("alert records / rule failures", f"{len(evaluator.history)} / {len(evaluator.failures)}", "> 0 / 0"),
        (f"remote-write {len(series)} series, {samples} samples", f"{pushed:.2f} s", "-"),
    ]
    with tempfile.TemporaryDirectory() as runs:
        rows.append(noise(Path(runs)))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(f"{row.name} | {row.measured} | {row.target}" if isinstance(row, Figure) else " | ".join(row))
