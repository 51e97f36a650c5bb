"""Composition of one twin: the Cluster from an app's manifests, the application model as its runtime,
telemetry, traces and a clock, and the HTTP app that serves them.

``Twin.advance(seconds)`` is the only way the world moves in stepped mode: cluster controllers, then the
application model, then a scrape every 15 simulated seconds; the buffer is pushed at the end of the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Topology
from orchestrator.errors import ConfigError
from orchestrator.twin.clock import STEP_SECONDS, ClockMode, RealtimeDriver, StepClock
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.failover import SiteFailover
from orchestrator.twin.model.engine import AppModel
from orchestrator.twin.model.podlogs import PodLogger
from orchestrator.twin.model.registry import ImageRegistry
from orchestrator.twin.model.state import Snapshot, ViewCache, snapshot
from orchestrator.twin.observe import metrics
from orchestrator.twin.observe.telemetry import SCRAPE_SECONDS, Telemetry
from orchestrator.twin.resources import BY_PLURAL, CHAOS_TYPES
from orchestrator.twin.runtime import ModelRuntime

if TYPE_CHECKING:
    from fastapi import FastAPI

# The C loader when libyaml is present: the same documents as ``yaml.safe_load_all``, several times faster.
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PODS = BY_PLURAL[("", "pods")]
_SERVICES = BY_PLURAL[("", "services")]
_CONFIGMAPS = BY_PLURAL[("", "configmaps")]
# Builds pushed by the agents' build tool land here, one ConfigMap each, as images land in a registry.
REGISTRY_NAMESPACE = "marathon-registry"
_SECRETS = BY_PLURAL[("", "secrets")]
_NODES = BY_PLURAL[("", "nodes")]
_DEPLOYMENTS = BY_PLURAL[("apps", "deployments")]
_STATEFULSETS = BY_PLURAL[("apps", "statefulsets")]


def read_manifests(app: str, *, root: Path) -> list[dict[str, Any]]:
    """The documents of ``manifests/<app>/app.yaml``."""
    path = root / "manifests" / app / "app.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: no rendered manifests for app {app!r}")
    return [doc for doc in yaml.load_all(path.read_text(), Loader=_FAST_LOADER) if doc]


def code_faults(app: str, *, root: Path) -> list[CodeFault]:
    """The app's code-fault builds: the twin's image registry beyond the base version."""
    if not (root / "fault_catalog" / app).is_dir():
        return []
    return load_catalog(app, root=root).code_faults()


class Twin:
    """One simulated cluster running one app. Thread-safe: every move holds the cluster lock."""

    def __init__(
        self,
        app: str,
        *,
        seed: int,
        clock: ClockMode = "stepped",
        remote_write_url: str | None = None,
        speed: float = 1.0,
        root: Path | None = None,
        step_seconds: float = STEP_SECONDS,
        keep_samples: bool = False,
        digest: bool = True,
        topology: Topology | None = None,
        faults: Iterable[CodeFault] | None = None,
    ) -> None:
        base = root if root is not None else default_root()
        self.app = app
        self.seed = seed
        self.topology = topology if topology is not None else load_topology(app, root=base)
        docs = read_manifests(app, root=base)
        self.registry = ImageRegistry(
            self.topology, code_faults(app, root=base) if faults is None else faults
        )
        for image in _images(docs):
            self.registry.allow(image)
        self.cluster = Cluster(seed=seed, nodes=self.topology.nodes, runtime=_Deferred())
        self.logger = PodLogger(
            topology=self.topology, logbook=self.cluster.logbook, seed=seed, step_seconds=step_seconds
        )
        self.model = AppModel(
            topology=self.topology,
            registry=self.registry,
            seed=seed,
            logger=self.logger,
            step_seconds=step_seconds,
        )
        self.cluster.runtime = ModelRuntime(self.model)
        self.cluster.apply_manifests(docs)
        self.failover = SiteFailover.of(self.topology)  # None for an app without an active/standby pair
        self.clock = StepClock(step_seconds=step_seconds)
        self.telemetry = Telemetry(
            remote_write_url=remote_write_url, keep_samples=keep_samples, digest=digest
        )
        self.scraper = metrics.Scraper(self.model, self.namespace)
        self.next_scrape = 0.0
        self.mode: ClockMode = clock
        self.speed = speed
        self._driver: RealtimeDriver | None = None
        self.requests = 0
        self._views = ViewCache()
        self._clock_error: BaseException | None = None

    @property
    def namespace(self) -> str:
        return self.topology.namespace

    @property
    def clock_error(self) -> BaseException | None:
        """Why the realtime clock stopped moving, as soon as it has (None while it runs or is stepped)."""
        if self._driver is not None and self._driver.error is not None:
            return self._driver.error
        return self._clock_error

    @property
    def now(self) -> float:
        """The clock's instant: the last step, or an instant before the next one that the world was moved
        to (a marathon injects at the scheduled second; the models react at the next step)."""
        return self.clock.instant

    # -- moving the world -------------------------------------------------------------------------
    def advance(self, seconds: float, *, flush: bool = True) -> float:
        """Move the clock ``seconds`` forward and the world through every whole step on the way; returns the
        instant reached. Its series are in Prometheus when it returns, unless ``flush`` is False (nothing
        reads them before the next advance that flushes)."""
        with self.cluster.lock:
            for now in self.clock.advance(seconds):
                self._step(now)
            if flush:
                self.telemetry.flush()
            return self.clock.instant

    def flush_begin(self) -> Callable[[], None]:
        """Push every series so far without waiting: the call returned waits until Prometheus has them (the
        world may move meanwhile; what it scrapes then is not waited for)."""
        with self.cluster.lock:
            return self.telemetry.flush_begin()

    def _step(self, now: float) -> None:
        for pushed in self.cluster.store.list(_CONFIGMAPS, REGISTRY_NAMESPACE):
            self.registry.push(pushed.get("data") or {})
        self.cluster.step(now)
        if self.failover is not None:
            self.failover.step(self.cluster, self.namespace, now)
        report = self.model.step(now, self.snapshot(now))
        self.requests += report.requests
        for pod in report.kills:
            self.cluster.delete_pod(self.namespace, pod)
        if now + 1e-9 >= self.next_scrape:
            self.telemetry.record(now, *self.series())
            self.next_scrape = now + SCRAPE_SECONDS

    def snapshot(self, now: float) -> Snapshot:
        store, ns = self.cluster.store, self.namespace
        chaos = [obj for rtype in CHAOS_TYPES for obj in store.list(rtype)]
        return snapshot(
            namespace=ns,
            now=now,
            workloads=store.list(_DEPLOYMENTS, ns) + store.list(_STATEFULSETS, ns),
            pods=store.list(_PODS, ns),
            services=store.list(_SERVICES, ns),
            configmaps=store.list(_CONFIGMAPS, ns),
            secrets=store.list(_SECRETS, ns),
            chaos=chaos,
            cache=self._views,
        )

    def workloads(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The namespace's Deployments and StatefulSets as the API server lists them (the stored objects
        themselves: read them under ``cluster.lock``, change nothing)."""
        store, ns = self.cluster.store, self.namespace
        return store.list(_DEPLOYMENTS, ns), store.list(_STATEFULSETS, ns)

    def series(self) -> tuple[list[metrics.Key], list[float]]:
        """Every series of the namespace now: their keys and their values, in the same order."""
        store, ns = self.cluster.store, self.namespace
        return self.scraper.collect(
            pods=store.list(_PODS, ns),
            deployments=store.list(_DEPLOYMENTS, ns),
            statefulsets=store.list(_STATEFULSETS, ns),
            nodes=store.list(_NODES),
        )

    def samples(self) -> list[metrics.Sample]:
        keys, values = self.series()
        return [(name, labels, value) for (name, labels), value in zip(keys, values, strict=True)]

    # -- clocks -----------------------------------------------------------------------------------
    def start_clock(self) -> None:
        """Start the realtime driver (a no-op in stepped mode)."""
        if self.mode == "realtime" and self._driver is None:
            self._driver = RealtimeDriver(
                advance=self.advance, speed=self.speed, step_seconds=self.clock.step_seconds
            )
            self._driver.start()

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.stop()
            self._clock_error = self._driver.error
            self._driver = None
        self.telemetry.close()

    # -- serving ----------------------------------------------------------------------------------
    def build_app(self, *, token: str) -> FastAPI:
        """The Kubernetes API of the cluster plus the twin's own routes (advance, status, traces), all
        but the public-info paths for holders of the bearer ``token`` only."""
        from orchestrator.twin.apiserver.app import (
            build_app,  # the API server is heavy; import only when serving
        )
        from orchestrator.twin.apiserver.control import control_router
        from orchestrator.twin.observe.traces import router

        app = build_app(self.cluster, token=token, usage=lambda: self.model.usage)
        app.include_router(control_router(self))
        app.include_router(router(self.model.traces, lock=self.cluster.lock))
        return app


class _Deferred:
    """Stands in for the runtime until the model exists (the Cluster wants one at construction)."""

    def verdict(self, pod: dict[str, Any], container: dict[str, Any], now: float) -> Any:
        raise RuntimeError("the twin's runtime is not wired yet")


def _images(docs: list[dict[str, Any]]) -> Iterable[str]:
    for doc in docs:
        spec = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            if container.get("image"):
                yield str(container["image"])
