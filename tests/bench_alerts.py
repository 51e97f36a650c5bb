"""Bench of the alert evaluator: the full rule pack over a synthetic 90-minute run in a real Prometheus."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import start_prometheus
from tests.telemetry.synthetic import Fault, generate
from tests.telemetry.telemetry_support import push

ORIGIN = 1_767_225_600.0
MINUTES = 90
BOUNDARY = 120.0  # the runner's default agent cadence


def bench() -> list[tuple[str, str, str]]:
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
    return [
        (
            f"evaluate {len(pack.rules)} rules over a {MINUTES}-min run ({boundaries} boundaries)",
            f"{evaluated:.2f} s",
            "< 10 s",
        ),
        ("alert records / rule failures", f"{len(evaluator.history)} / {len(evaluator.failures)}", "> 0 / 0"),
        (f"remote-write {len(series)} series, {samples} samples", f"{pushed:.2f} s", "-"),
    ]


if __name__ == "__main__":
    for row in bench():
        print(" | ".join(row))
