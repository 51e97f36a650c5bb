"""The world a marathon runs against, and its clock: a twin in this process (stepped or realtime) with a
fresh per-run Prometheus, or a real cluster given by kubeconfig and Prometheus URL.

Schedule time is the only clock the runner's logic reads (``now_s``). The stepped twin's schedule time is
its simulated time; the realtime twin's too (it advances by itself); a real cluster's is the monotonic
wall clock since the run started, which is the one place wall time becomes schedule time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from orchestrator.cluster.client import KubeClient
from orchestrator.errors import OrchestratorError, TelemetryError
from orchestrator.telemetry.server import PrometheusServer, connect_prometheus, start_prometheus
from orchestrator.twin.clock import STEP_SECONDS
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.timefmt import EPOCH

REALTIME_POLL_S = 0.05
REALTIME_SETTLE_S = 1.0


class World(Protocol):
    kubeconfig: Path
    prometheus: PrometheusServer
    origin_epoch_s: float  # Unix time of schedule time 0 in the clock of the cluster's timestamps and series
    frozen: bool  # True when nothing moves while the agent runs (the stepped twin)

    @property
    def traces_url(self) -> str | None: ...

    def now_s(self) -> float: ...

    def advance_to(self, t_s: float, *, stop: threading.Event) -> float: ...

    def settle(self) -> None: ...

    def begin(self) -> None:
        """Start the clock (once everything else of the run is ready)."""

    def client(self) -> KubeClient: ...

    def stop(self) -> None: ...


@dataclass
class TwinWorld:
    """A twin in this process pushing to a Prometheus started for the run."""

    running: RunningTwin
    prometheus: PrometheusServer
    kubeconfig: Path
    frozen: bool
    origin_epoch_s: float = EPOCH.timestamp()
    _client: KubeClient | None = field(default=None, repr=False)

    @property
    def traces_url(self) -> str | None:
        return self.running.url

    def begin(self) -> None:
        # The twin is served stepped and frozen at time 0 until the run is ready; a realtime run's world
        # starts moving only now, so schedule time 0 is the start of the loop, not of the setup.
        if not self.frozen and self.running.twin.mode != "realtime":
            self.running.twin.mode = "realtime"
            self.running.twin.start_clock()

    def now_s(self) -> float:
        return self.running.twin.now

    def advance_to(self, t_s: float, *, stop: threading.Event) -> float:
        """Stepped: move the world to ``t_s`` (not back: injections may have settled it past).
        Realtime: wait until the world's own clock has reached ``t_s`` or ``stop`` is set."""
        if self.frozen:
            if t_s > self.now_s():
                self.running.advance(t_s - self.now_s())
            return self.now_s()
        while self.now_s() < t_s and not stop.is_set():
            self._check_clock()
            stop.wait(REALTIME_POLL_S)
        return self.now_s()

    def settle(self) -> None:
        if self.frozen:
            self.running.advance(STEP_SECONDS)
        else:
            self._check_clock()
            time.sleep(REALTIME_SETTLE_S)

    def client(self) -> KubeClient:
        if self._client is None:
            self._client = KubeClient.from_kubeconfig(self.kubeconfig)
        return self._client

    def _check_clock(self) -> None:
        error = self.running.twin_error or self.running.twin.clock_error
        if error is not None:
            raise OrchestratorError(f"the twin's realtime clock stopped: {error}")

    def stop(self) -> None:
        try:
            if self._client is not None:
                self._client.close()
            self.running.stop()
        finally:
            self.prometheus.stop()


def start_twin_world(*, app: str, seed: int, run_dir: Path, clock: str, speed: float) -> TwinWorld:
    """Start the run's Prometheus on a fresh TSDB under ``run_dir`` and the twin remote-writing to it."""
    prometheus = start_prometheus(run_dir)
    try:
        running = start_twin(
            app,
            seed=seed,
            kubeconfig=run_dir / "kubeconfig",
            clock="stepped",  # a realtime world is started by ``begin``
            speed=speed,
            remote_write_url=prometheus.remote_write_url,
        )
    except BaseException:
        prometheus.stop()
        raise
    return TwinWorld(
        running=running, prometheus=prometheus, kubeconfig=running.kubeconfig, frozen=clock == "stepped"
    )


@dataclass
class KubeWorld:
    """A real cluster: time is the wall clock since the run started; nothing is started or stopped."""

    kubeconfig: Path
    prometheus: PrometheusServer
    origin_epoch_s: float
    _origin_monotonic: float
    traces_url: str | None = None
    frozen: bool = False
    _client: KubeClient | None = field(default=None, repr=False)

    def now_s(self) -> float:
        return time.monotonic() - self._origin_monotonic

    def advance_to(self, t_s: float, *, stop: threading.Event) -> float:
        while self.now_s() < t_s and not stop.is_set():
            stop.wait(min(1.0, max(REALTIME_POLL_S, t_s - self.now_s())))
        return self.now_s()

    def settle(self) -> None:
        time.sleep(REALTIME_SETTLE_S)

    def begin(self) -> None:
        return None  # a real cluster's clock always runs; schedule time counts from the connection

    def client(self) -> KubeClient:
        if self._client is None:
            self._client = KubeClient.from_kubeconfig(self.kubeconfig)
        return self._client

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()


def connect_kube_world(*, kubeconfig: Path, prometheus_url: str) -> KubeWorld:
    try:
        prometheus = connect_prometheus(prometheus_url)
    except TelemetryError as exc:
        raise TelemetryError(f"the cluster's Prometheus: {exc}") from exc
    return KubeWorld(
        kubeconfig=kubeconfig,
        prometheus=prometheus,
        origin_epoch_s=time.time(),
        _origin_monotonic=time.monotonic(),
    )
