"""A per-run Prometheus server on a fresh TSDB, or a connection to an existing one.

The per-run server scrapes nothing: the twin pushes its series by remote write, at simulated timestamps
that may lie in the past, so the out-of-order window is wide and retention is effectively unlimited.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx
import yaml

from orchestrator.errors import TelemetryError

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# The Go collector's target heap growth for a per-run server (Go's default is 100): it ingests a marathon's
# samples with a sixth less CPU for about 50 MB more memory. A GOGC of the caller's environment wins.
GOGC = "200"


@dataclass
class PrometheusServer:
    """A Prometheus to query and push to. ``process`` is set only when this object started it."""

    url: str
    data_dir: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def remote_write_url(self) -> str:
        return f"{self.url}/api/v1/write"

    def ready(self) -> bool:
        """Whether ``/-/ready`` answers 200 now."""
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until the server answers ready: ``TelemetryError`` if the process this object started
        exits first, or (with the server stopped) when ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            process = self.process
            if process is not None and process.poll() is not None:
                log = self.data_dir.parent / "prometheus.log" if self.data_dir is not None else None
                raise TelemetryError(
                    f"prometheus exited with code {process.returncode} before becoming ready; see {log}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise TelemetryError(f"prometheus at {self.url} not ready after {timeout:.0f} s")
            time.sleep(0.1)

    def stop(self, *, timeout: float = STOP_TIMEOUT) -> None:
        """Terminate the server this object started (by its PID) and wait for it; kill it if it lingers."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)

    def __enter__(self) -> PrometheusServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def prometheus_binary(name: str = "prometheus") -> str:
    """The path of the ``prometheus`` executable, or a ``TelemetryError`` saying how to install it."""
    path = shutil.which(name)
    if path is None:
        raise TelemetryError(
            f"the {name!r} executable is not on PATH: install the Debian package 'prometheus' "
            "(apt-get install prometheus) or run 'make prometheus'"
        )
    return path


def config_text(
    *, rule_files: Sequence[Path] = (), evaluation_interval: str = "1m", out_of_order_window: str = "30d"
) -> str:
    """The minimal configuration of a per-run server: no scrape targets (no side effects)."""
    config: dict[str, object] = {
        "global": {"evaluation_interval": evaluation_interval},
        "storage": {"tsdb": {"out_of_order_time_window": out_of_order_window}},
        "scrape_configs": [],
    }
    if rule_files:
        config["rule_files"] = [str(path) for path in rule_files]
    return yaml.safe_dump(config, sort_keys=True)


def start_prometheus(
    run_dir: Path,
    *,
    rule_files: Sequence[Path] = (),
    evaluation_interval: str = "1m",
    out_of_order_window: str = "30d",
    binary: str = "prometheus",
    ready_timeout: float = READY_TIMEOUT,
    wait: bool = True,
) -> PrometheusServer:
    """Start Prometheus on a fresh TSDB under ``run_dir/prometheus`` listening on 127.0.0.1 on a free port,
    and wait until it is ready (without ``wait``, the caller does other work first and then calls
    ``wait_ready``, stopping the server itself if it gives up before). Rule files are loaded only when
    given (for checks against Prometheus' own rule manager); the run's evaluator queries instead."""
    executable = prometheus_binary(binary)
    home = run_dir / "prometheus"
    data_dir = home / "data"
    if data_dir.exists() and any(data_dir.iterdir()):
        raise TelemetryError(f"{data_dir} already holds a TSDB; a run's Prometheus starts fresh")
    data_dir.mkdir(parents=True, exist_ok=True)
    config = home / "prometheus.yml"
    config.write_text(
        config_text(
            rule_files=[p.resolve() for p in rule_files],
            evaluation_interval=evaluation_interval,
            out_of_order_window=out_of_order_window,
        ),
        encoding="utf-8",
    )
    port = _free_port()
    log = (home / "prometheus.log").open("ab")
    process = subprocess.Popen(
        [
            *_with_parent(),
            executable,
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-remote-write-receiver",
            "--storage.tsdb.retention.time=100y",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=home,
        env={"GOGC": GOGC, **os.environ},
        # Out of the terminal's process group: Ctrl-C asks the run to stop cleanly, and the run still needs
        # its Prometheus for that; the server ends with the run (stop(), or the parent-death signal).
        start_new_session=True,
    )
    log.close()
    server = PrometheusServer(url=f"http://127.0.0.1:{port}", data_dir=data_dir, process=process)
    if wait:
        server.wait_ready(ready_timeout)
    return server


def connect_prometheus(url: str, *, ready_timeout: float = 10.0) -> PrometheusServer:
    """A server that already runs (a real cluster's Prometheus); it is never stopped by us."""
    server = PrometheusServer(url=url.rstrip("/"))
    deadline = time.monotonic() + ready_timeout
    while not server.ready():
        if time.monotonic() > deadline:
            raise TelemetryError(f"Prometheus at {server.url} is not ready (GET /-/ready)")
        time.sleep(0.2)
    return server


def _with_parent() -> list[str]:
    """A command prefix that stops Prometheus when the process that started it dies, even by ``kill -9``.

    util-linux's ``setpriv --pdeathsig`` asks the kernel for it; without setpriv the server is only
    stopped by ``stop()``.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
