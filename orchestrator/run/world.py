"""The world a marathon runs against, and its clock: a twin in this process (stepped or realtime) with a
fresh per-run Prometheus, or a real cluster given by kubeconfig and Prometheus URL.

Schedule time is the only clock the runner's logic reads (``now_s``). The twin's schedule time is its
simulated time less its warm-up (it boots, serves, and runs five quiet minutes before schedule time 0, as a
real marathon starts on a deployed, steady application); the realtime twin's clock then advances by itself.
A real cluster's is the monotonic wall clock since the run started, which is the one place wall time
becomes schedule time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from orchestrator.catalog.faults import CodeFault
from orchestrator.cluster.client import KubeClient, not_ready_of
from orchestrator.errors import OrchestratorError, TelemetryError
from orchestrator.telemetry.server import PrometheusServer, connect_prometheus, start_prometheus
from orchestrator.twin.clock import STEP_SECONDS
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.timefmt import epoch_s

REALTIME_POLL_S = 0.05
REALTIME_SETTLE_S = 1.0
# Before schedule time 0 the twin runs until every Deployment serves, then this much longer, so the longest
# window the rule pack and the probes read (5 minutes) holds only the serving application.
WARMUP_QUIET_S = 300.0
WARMUP_LIMIT_S = 1800.0


class World(Protocol):
    kubeconfig: Path
    prometheus: PrometheusServer
    @property
    def moves_by_itself(self) -> bool:
        """Whether the world's clock runs while the agent does (a realtime twin, a real cluster): the runner
        then applies the changes that fall due meanwhile beside the agent."""

    @property
    def origin_epoch_s(self) -> float:
        """Unix time of schedule time 0 in the clock of the cluster's timestamps and series."""

    @property
    def traces_url(self) -> str | None: ...

    def now_s(self) -> float: ...

    def advance_to(self, t_s: float, *, stop: threading.Event, series: bool = True) -> float:
        """Move (or wait for) the world to ``t_s``; with ``series``, every series so far is in Prometheus
        when it returns. Without, a world that pushes its own series may leave them for a later call that
        asks: nothing reads Prometheus in between."""

    def series_begin(self) -> Callable[[], None]:
        """Every series so far on its way to Prometheus; the call returned waits until they are there. The
        world may move meanwhile (an injection settling): what it scrapes then is not waited for."""

    def settle(self) -> None: ...

    def catch_up(self, t_s: float, *, stop: threading.Event) -> None:
        """After an invocation: move a world that stood still while the agent ran on to ``t_s``; a live
        world has moved by itself."""

    def begin(self) -> None:
        """Start the clock (once everything else of the run is ready)."""

    def client(self) -> KubeClient: ...

    def stop_soon(self) -> None:
        """Tell the world's servers to stop, without waiting: the run's servers then stop side by side."""

    def stop(self) -> None: ...


@dataclass
class TwinWorld:
    """A twin in this process pushing to a Prometheus started for the run; its clock is chosen once, by the
    subclass: ``SteppedTwinWorld`` or ``RealtimeTwinWorld``.

    ``offset_s`` is the twin's own time at schedule time 0: the warm-up before it (``warm_up``).
    """

    running: RunningTwin
    prometheus: PrometheusServer
    kubeconfig: Path
    offset_s: float = 0.0
    _client: KubeClient | None = field(default=None, repr=False)

    @property
    def origin_epoch_s(self) -> float:
        return epoch_s() + self.offset_s

    @property
    def traces_url(self) -> str | None:
        return self.running.url

    def now_s(self) -> float:
        return self.running.twin.now - self.offset_s

    def warm_up(self) -> float:
        """Before the run: step the frozen twin until every Deployment of the app has all its replicas
        available, then ``WARMUP_QUIET_S`` more, and make that schedule time 0; the warm-up's length.

        A run whose application never becomes ready refuses to start (``OrchestratorError`` naming the
        workloads) rather than inject faults into an application that was never serving.
        """
        namespace = self.running.twin.namespace
        started = self.running.twin.now
        while True:
            waiting = self._not_ready()
            if not waiting:
                break
            if self.running.twin.now - started >= WARMUP_LIMIT_S:
                raise OrchestratorError(
                    f"{namespace}: not every workload became available within {WARMUP_LIMIT_S:.0f} s of "
                    f"simulated time; still waiting for {', '.join(waiting)}"
                )
            # Nothing reads Prometheus before schedule time 0: the steps' series are pushed as they come
            # and waited for once, by the quiet advance below.
            self.running.advance(STEP_SECONDS, flush=False)
        self.running.advance(WARMUP_QUIET_S)
        self.offset_s = self.running.twin.now
        return self.offset_s - started

    def _not_ready(self) -> list[str]:
        """What ``workloads_not_ready`` answers through the twin's API, read from its store in-process."""
        twin = self.running.twin
        with twin.cluster.lock:
            return not_ready_of(*twin.workloads())

    def client(self) -> KubeClient:
        if self._client is None:
            self._client = KubeClient.from_kubeconfig(self.kubeconfig)
        return self._client

    def _check_clock(self) -> None:
        error = self.running.twin_error or self.running.twin.clock_error
        if error is not None:
            raise OrchestratorError(f"the twin's realtime clock stopped: {error}")

    def stop_soon(self) -> None:
        self.running.stop_soon()

    def stop(self) -> None:
        try:
            if self._client is not None:
                self._client.close()
            self.running.stop()
        finally:
            self.prometheus.stop()


@dataclass
class SteppedTwinWorld(TwinWorld):
    """The twin stands still unless the runner moves it: nothing happens while the agent runs."""

    moves_by_itself: ClassVar[bool] = False

    def begin(self) -> None:
        return None  # the runner moves the twin; there is no clock to start

    def advance_to(self, t_s: float, *, stop: threading.Event, series: bool = True) -> float:
        """Move the world to ``t_s`` (not back: injections may have settled it past), with every series so
        far in Prometheus when ``series`` says that what is read next may read them. Without, the series
        are pushed in whole batches as they come and waited for by the next call that asks: each wait for
        a partial batch costs the pusher and Prometheus more per sample and holds the world still."""
        self.running.advance(max(0.0, t_s - self.now_s()), flush=series)
        return self.now_s()

    def series_begin(self) -> Callable[[], None]:
        return self.running.flush_begin()

    def catch_up(self, t_s: float, *, stop: threading.Event) -> None:
        """Move the world to ``t_s`` without waiting for Prometheus: after an invocation only the cluster
        is read until the next ``advance_to``, which waits for the series of both moves at once."""
        if t_s > self.now_s():
            self.running.advance(t_s - self.now_s(), flush=False)

    def settle(self) -> None:
        """One step for an injection or a revert waiting on the cluster, which is all it reads: the series
        wait for the next ``advance_to``."""
        self.running.advance(STEP_SECONDS, flush=False)


@dataclass
class RealtimeTwinWorld(TwinWorld):
    """The twin's own clock runs from ``begin`` on, while the agent runs too."""

    moves_by_itself: ClassVar[bool] = True

    def begin(self) -> None:
        # The twin is served stepped and frozen at time 0 until the run is ready; a realtime run's world
        # starts moving only now, so schedule time 0 is the start of the loop, not of the setup.
        if self.running.twin.mode != "realtime":
            self.running.twin.mode = "realtime"
            self.running.twin.start_clock()

    def advance_to(self, t_s: float, *, stop: threading.Event, series: bool = True) -> float:
        """Wait until the world's own clock has reached ``t_s`` or ``stop`` is set (its series are pushed
        as they come, whatever ``series`` says)."""
        while self.now_s() < t_s and not stop.is_set():
            self._check_clock()
            stop.wait(REALTIME_POLL_S)
        return self.now_s()

    def series_begin(self) -> Callable[[], None]:
        return lambda: None  # pushed as they come, as ``advance_to`` has them

    def catch_up(self, t_s: float, *, stop: threading.Event) -> None:
        return None  # the world moved by itself while the agent ran

    def settle(self) -> None:
        self._check_clock()
        time.sleep(REALTIME_SETTLE_S)


def start_twin_world(
    *,
    app: str,
    seed: int,
    run_dir: Path,
    clock: str,
    speed: float,
    faults: Iterable[CodeFault] | None = None,
) -> SteppedTwinWorld | RealtimeTwinWorld:
    """Start the run's Prometheus on a fresh TSDB under ``run_dir`` and the twin remote-writing to it;
    ``faults`` are the app's code faults when the caller has its catalog (else the twin reads it)."""
    # Prometheus starts (in its own process) while the twin boots; nothing is pushed before the warm-up.
    prometheus = start_prometheus(run_dir, wait=False)
    try:
        running = start_twin(
            app,
            seed=seed,
            kubeconfig=run_dir / "kubeconfig",
            clock="stepped",  # a realtime world is started by ``begin``
            speed=speed,
            remote_write_url=prometheus.remote_write_url,
            faults=faults,
            digest=False,  # the bundle is what a run compares; a digest of every sample is work for nothing
        )
    except BaseException:
        prometheus.stop()
        raise
    kind = SteppedTwinWorld if clock == "stepped" else RealtimeTwinWorld
    world = kind(running=running, prometheus=prometheus, kubeconfig=running.kubeconfig)
    try:
        prometheus.wait_ready()
        world.warm_up()
    except BaseException:
        world.stop()
        raise
    return world


@dataclass
class KubeWorld:
    """A real cluster: time is the wall clock since the run started; nothing is started or stopped."""

    moves_by_itself: ClassVar[bool] = True

    kubeconfig: Path
    prometheus: PrometheusServer
    origin_epoch_s: float
    _origin_monotonic: float
    traces_url: str | None = None
    _client: KubeClient | None = field(default=None, repr=False)

    def now_s(self) -> float:
        return time.monotonic() - self._origin_monotonic

    def advance_to(self, t_s: float, *, stop: threading.Event, series: bool = True) -> float:
        while self.now_s() < t_s and not stop.is_set():
            stop.wait(min(1.0, max(REALTIME_POLL_S, t_s - self.now_s())))
        return self.now_s()

    def series_begin(self) -> Callable[[], None]:
        return lambda: None  # the cluster's Prometheus scrapes its targets itself, as ``advance_to`` has it

    def settle(self) -> None:
        time.sleep(REALTIME_SETTLE_S)

    def catch_up(self, t_s: float, *, stop: threading.Event) -> None:
        return None  # a real cluster moved by itself while the agent ran

    def begin(self) -> None:
        return None  # a real cluster's clock always runs; schedule time counts from the connection

    def client(self) -> KubeClient:
        if self._client is None:
            self._client = KubeClient.from_kubeconfig(self.kubeconfig)
        return self._client

    def stop_soon(self) -> None:
        pass  # a cluster's servers are not the run's

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
