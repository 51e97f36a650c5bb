"""Twin speed for ``make bench``: simulated seconds per wall second per app, and a 90-minute OB marathon
pushed to a real Prometheus (the figure the product promises: under 20 wall seconds)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from orchestrator.catalog.apps import app_names
from orchestrator.twin.boot import Twin

WARMUP_S = 120.0
MEASURED_S = 1800.0
MARATHON_S = 5400.0
ADVANCE_S = 120.0  # the runner's default boundary interval


def _speed(app: str) -> tuple[float, float]:
    """(simulated seconds per wall second, wall milliseconds per 5 s step) without pushing."""
    twin = Twin(app, seed=1)
    twin.advance(WARMUP_S)
    started = time.perf_counter()
    twin.advance(MEASURED_S)
    wall = time.perf_counter() - started
    steps = MEASURED_S / twin.clock.step_seconds
    return MEASURED_S / wall, 1000.0 * wall / steps


def _marathon_with_prometheus() -> tuple[str, str]:
    if shutil.which("prometheus") is None:
        return "skipped (no prometheus binary)", ""
    from orchestrator.telemetry.server import start_prometheus

    with tempfile.TemporaryDirectory() as tmp:
        server = start_prometheus(Path(tmp))
        try:
            twin = Twin("online-boutique", seed=1, remote_write_url=server.remote_write_url)
            started = time.perf_counter()
            while twin.now < MARATHON_S:
                twin.advance(ADVANCE_S)
            wall = time.perf_counter() - started
            samples = twin.telemetry.pushed_samples
        finally:
            server.stop()
    return f"{wall:.1f} s wall ({MARATHON_S / wall:.0f} sim s/s, {samples} samples pushed)", "< 20 s"


def bench() -> list[tuple[str, str, str]]:
    rows = []
    for app in app_names():
        speed, per_step = _speed(app)
        rows.append((f"{app}: simulated s per wall s (no push)", f"{speed:.0f} ({per_step:.1f} ms/step)", ""))
    measured, target = _marathon_with_prometheus()
    rows.append(("online-boutique: 90 simulated min with remote write", measured, target))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(" | ".join(row))
