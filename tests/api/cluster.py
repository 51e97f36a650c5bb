"""A cluster that runs apart from the control plane: a realtime twin in its own process, remote-writing
to its own Prometheus, both ended by their PIDs."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orchestrator.telemetry.server import start_prometheus

_SERVING = re.compile(r"serving at (https://127\.0\.0\.1:\d+)")


@dataclass(frozen=True)
class Cluster:
    url: str
    kubeconfig: Path
    prometheus_url: str


@contextmanager
def separate_cluster(directory: Path, *, app: str = "online-boutique", seed: int = 3) -> Iterator[Cluster]:
    directory.mkdir(parents=True, exist_ok=True)
    prometheus = start_prometheus(directory)
    twin: subprocess.Popen[str] | None = None
    try:
        with (directory / "twin.log").open("w", encoding="utf-8") as log:
            twin = subprocess.Popen(
                [sys.executable, "-m", "orchestrator.cli", "twin", "serve", "--app", app,
                 "--clock", "realtime", "--seed", str(seed), "--kubeconfig", str(directory / "kubeconfig"),
                 "--remote-write", prometheus.remote_write_url],
                stdout=subprocess.PIPE, stderr=log, text=True, cwd=directory,
            )  # fmt: skip
        assert twin.stdout is not None
        found = _SERVING.search(twin.stdout.readline())
        assert found, (directory / "twin.log").read_text(encoding="utf-8")
        yield Cluster(url=found.group(1), kubeconfig=directory / "kubeconfig", prometheus_url=prometheus.url)
    finally:
        if twin is not None and twin.poll() is None:
            twin.kill()
            twin.wait()
        prometheus.stop()
