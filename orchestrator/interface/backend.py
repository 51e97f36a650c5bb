"""What the agent tools read from and act on: the cluster, Prometheus, traces, the topology, the alerts the
agent was shown, the source store, and the run's clock.

Times: ``now_s()`` is schedule time (seconds since the run's schedule origin); ``origin_epoch_s`` is the
Unix time of schedule time 0 in the clock of the cluster's timestamps, metrics and traces (the twin's
simulated clock, or the wall clock of a real cluster), so ``epoch(t)`` converts between the two.
"""

from __future__ import annotations

import copy
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
from orchestrator.cluster.fields import selector_of
from orchestrator.interface.policy import HIDDEN_NAMESPACES, MUTATION_LIMIT, READ_LIMIT, PolicyContext
from orchestrator.interface.sources import SourceStore
from orchestrator.interface.views import REVISION
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
        """The workloads of the application an operator may act on (everything but the load generator)."""
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

    def workload_ref(self, service: str, namespace: str | None = None) -> ObjectRef:
        """The Deployment or StatefulSet that runs ``service``'s pods (a Deployment outside the app)."""
        where = namespace or self.namespace
        kind = "Deployment"
        if where == self.namespace and service in self.topology.service_names:
            kind = self.topology.service(service).workload
        return ObjectRef(kind, where, service)

    def workload(self, service: str, namespace: str | None = None) -> Json:
        return self.kube.read(self.workload_ref(service, namespace))

    def container_of(self, service: str) -> str:
        """The main container's name of ``service`` (sidecars aside)."""
        if service in self.topology.service_names:
            return self.topology.service(service).container_name
        return service

    def pods_of(self, service: str, namespace: str | None = None) -> list[Json]:
        """The pods a workload's selector picks, in name order."""
        workload = self.workload(service, namespace)
        pods = self.kube.list_objects(
            "Pod", namespace=namespace or self.namespace, selector=selector_of(workload)
        )
        return sorted(pods, key=lambda pod: str(pod["metadata"]["name"]))


@dataclass(frozen=True)
class Revision:
    """One revision of a workload as ``kubectl rollout`` reads it: its number, the pod template the workload
    takes back on an undo, and the object holding it (a ReplicaSet, or a StatefulSet's ControllerRevision)."""

    number: int
    template: Json
    holder: Json


def revisions(backend: Backend, ref: ObjectRef, workload: Json) -> dict[int, Revision]:
    """The revisions of ``workload`` by number: the objects its selector picks that it owns, as ``kubectl
    rollout`` lists them. Side effects: a list call."""
    uid, name = workload["metadata"].get("uid"), workload["metadata"]["name"]
    holder_kind = "ControllerRevision" if ref.kind == "StatefulSet" else "ReplicaSet"
    listed = backend.kube.list_objects(holder_kind, namespace=ref.namespace, selector=selector_of(workload))
    found: dict[int, Revision] = {}
    for holder in listed:
        owners = holder["metadata"].get("ownerReferences", [])
        mine = (o.get("uid") == uid or o.get("name") == name for o in owners if o.get("kind") == ref.kind)
        if not any(mine):
            continue
        if holder_kind == "ControllerRevision":
            number = int(holder.get("revision", 0))
            template = copy.deepcopy(holder.get("data", {}).get("spec", {}).get("template", {}))
            template.pop("$patch", None)
        else:
            number = _annotated_revision(holder)
            # As ``kubectl rollout undo``: the ReplicaSet's template without its hash label.
            template = copy.deepcopy(holder["spec"]["template"])
            template.get("metadata", {}).get("labels", {}).pop("pod-template-hash", None)
        found[number] = Revision(number, template, holder)
    return found


def current_revision(ref: ObjectRef, workload: Json, found: dict[int, Revision]) -> int:
    """The revision ``workload`` runs: a Deployment's annotation, a StatefulSet's newest revision."""
    if ref.kind == "StatefulSet":
        return max(found, default=0)
    return _annotated_revision(workload)


def _annotated_revision(obj: Json) -> int:
    try:
        return int((obj["metadata"].get("annotations") or {}).get(REVISION, 0))
    except ValueError:
        return 0


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
