"""What the agent tools read from and act on: the cluster, Prometheus, traces, the topology, the alerts the
agent was shown, the source store, and the run's clock.

Times: ``now_s()`` is schedule time (seconds since the run's schedule origin); ``origin_epoch_s`` is the
Unix time of schedule time 0 in the clock of the cluster's timestamps, metrics and traces (the twin's
simulated clock, or the wall clock of a real cluster), so ``epoch(t)`` converts between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.bundle.records import AlertRecord
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import ServiceKind, Topology
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.interface.policy import HIDDEN_NAMESPACES, MUTATION_LIMIT, READ_LIMIT, PolicyContext
from orchestrator.interface.sources import SourceStore
from orchestrator.telemetry.querying import Querier

Json = dict[str, Any]


def _no_alerts() -> Sequence[AlertRecord]:
    return ()


@dataclass
class Backend:
    kube: KubeClient
    topology: Topology
    now_s: Callable[[], float]
    origin_epoch_s: float
    sources: SourceStore
    alerts: Callable[[], Sequence[AlertRecord]] = _no_alerts
    querier: Querier | None = None
    traces_url: str | None = None
    namespace: str = ""
    hidden_namespaces: frozenset[str] = HIDDEN_NAMESPACES
    mutation_limit: int = MUTATION_LIMIT
    read_limit: int = READ_LIMIT
    _flags: dict[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.namespace:
            self.namespace = self.topology.namespace
        self._flags = {flag.name: frozenset(flag.variants) for flag in self.topology.feature_flags}

    def epoch(self, t_s: float) -> float:
        """Unix seconds (in the cluster's clock) of schedule time ``t_s``."""
        return self.origin_epoch_s + t_s

    def now_epoch(self) -> float:
        return self.epoch(self.now_s())

    def schedule_time(self, timestamp: str | None) -> float | None:
        """Schedule seconds of a Kubernetes timestamp (RFC 3339), or None when absent or unreadable."""
        if not timestamp:
            return None
        try:
            moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        return round(moment.timestamp() - self.origin_epoch_s, 3)

    def age_s(self, timestamp: str | None) -> float | None:
        at = self.schedule_time(timestamp)
        return None if at is None else round(self.now_s() - at, 1)

    @property
    def workloads(self) -> frozenset[str]:
        """The Deployments of the application an operator may act on (everything but the load generator)."""
        return frozenset(
            s.name
            for s in self.topology.services
            if s.name != self.topology.loadgen and s.kind != ServiceKind.LOADGEN
        )

    def policy_context(self, *, mutations_done: int, reads_done: int = 0) -> PolicyContext:
        return PolicyContext(
            namespace=self.namespace,
            workloads=self.workloads,
            loadgen=self.topology.loadgen,
            flags=self._flags,
            nodes=frozenset(node.name for node in self.topology.nodes),
            hidden_namespaces=self.hidden_namespaces,
            mutations_done=mutations_done,
            mutation_limit=self.mutation_limit,
            reads_done=reads_done,
            read_limit=self.read_limit,
        )

    def deployment(self, service: str, namespace: str | None = None) -> Json:
        return self.kube.read(ObjectRef("Deployment", namespace or self.namespace, service))

    def container_of(self, service: str) -> str:
        """The main container's name of ``service`` (sidecars aside)."""
        if service in self.topology.service_names:
            return self.topology.service(service).container_name
        return service

    def pods_of(self, service: str, namespace: str | None = None) -> list[Json]:
        """The pods a Deployment's selector picks, in name order."""
        deployment = self.deployment(service, namespace)
        pods = self.kube.list_objects(
            "Pod", namespace=namespace or self.namespace, selector=selector_of(deployment)
        )
        return sorted(pods, key=lambda pod: str(pod["metadata"]["name"]))


def selector_of(workload: Json) -> str:
    """A workload's label selector as a list call takes it (``k=v,...``; its ``matchLabels``, which is what
    the apps' workloads select by). No side effects."""
    labels = workload["spec"]["selector"].get("matchLabels", {})
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def build_backend(
    app: str,
    *,
    kube: KubeClient,
    now_s: Callable[[], float],
    origin_epoch_s: float,
    alerts: Callable[[], Sequence[AlertRecord]] = _no_alerts,
    querier: Querier | None = None,
    traces_url: str | None = None,
    root: Path | None = None,
) -> Backend:
    """The backend of ``app``: its topology, and a source store built from its catalog's code faults."""
    topology = load_topology(app, root=root)
    return Backend(
        kube=kube,
        topology=topology,
        now_s=now_s,
        origin_epoch_s=origin_epoch_s,
        sources=SourceStore.of(topology, load_catalog(app, root=root).entries),
        alerts=alerts,
        querier=querier,
        traces_url=traces_url,
    )
