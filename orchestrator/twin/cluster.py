"""The simulated cluster: the object store, logs, events and nodes, moved by controllers at simulated time.

``step(now)`` is the only thing that moves the world; the API server only reads and writes objects. Both
hold ``lock``, so a server thread and the stepping thread never interleave inside one operation.
"""

from __future__ import annotations

import copy
import os
import threading
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from orchestrator.catalog.topology import Node
from orchestrator.twin import defaults
from orchestrator.twin.controllers.chaos import ChaosStatusController
from orchestrator.twin.controllers.daemonsets import DaemonSetController
from orchestrator.twin.controllers.deployments import WorkloadControllers
from orchestrator.twin.controllers.endpoints import EndpointsController
from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.jobs import JobController, job_defaults
from orchestrator.twin.controllers.lifecycle import Kubelet
from orchestrator.twin.controllers.namespaces import NamespaceDefaultsController
from orchestrator.twin.controllers.podstate import qos_class
from orchestrator.twin.controllers.replicasets import ReplicaSetController
from orchestrator.twin.controllers.statefulsets import StatefulSetController
from orchestrator.twin.logbook import LogBook
from orchestrator.twin.resources import KUBERNETES_VERSION
from orchestrator.twin.runtime_protocol import PodRuntime
from orchestrator.twin.store import (
    DAEMONSETS,
    DEPLOYMENTS,
    ENDPOINTS,
    JOBS,
    NAMESPACES,
    NODES,
    PODS,
    REPLICASETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFULSETS,
    Obj,
    Store,
    resource_for,
)
from orchestrator.twin.timefmt import rfc3339

# Node size of a kind worker on a laptop-class machine; the topology files name nodes and zones, not sizes.
DEFAULT_NODE_CPU = "8"
DEFAULT_NODE_MEMORY = "32Gi"
MAX_PODS_PER_NODE = 110
SYSTEM_NAMESPACE = "kube-system"
# Namespaces the API server refuses to delete (the NamespaceLifecycle admission plugin's immortal ones).
IMMORTAL_NAMESPACES = frozenset({"default", SYSTEM_NAMESPACE, "kube-public"})
# The twin serves Chaos Mesh's kinds, so it boots as a cluster with Chaos Mesh installed: its namespace is
# there (an ordinary one), where chaos objects are created.
CHAOS_MESH_NAMESPACE = "chaos-mesh"


class Cluster:
    """Everything the twin's Kubernetes side holds. Construct, ``apply_manifests``, then ``step``.

    For the application model: ``store`` (plain dicts; read, never mutate), ``logbook`` (append lines),
    ``events`` (record events), ``runtime`` (may be replaced before the first step), ``lock``, ``now``,
    ``delete_pod`` (what a pod kill does).
    """

    def __init__(
        self,
        *,
        seed: int,
        nodes: Sequence[Node],
        runtime: PodRuntime,
        node_cpu: str = DEFAULT_NODE_CPU,
        node_memory: str = DEFAULT_NODE_MEMORY,
        start: float = 0.0,
        identity: str | None = None,
    ) -> None:
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        self.seed = seed
        self.runtime = runtime
        self.lock = threading.RLock()
        self.now = start
        self.store = Store(seed=seed)
        self.store.now = start
        self.logbook = LogBook()
        self.events = EventRecorder(self.store)
        self.store.defaulters.update(
            {
                (DEPLOYMENTS.group, DEPLOYMENTS.plural): lambda obj, _old: defaults.deployment(obj),
                (REPLICASETS.group, REPLICASETS.plural): lambda obj, _old: defaults.replicaset(obj),
                (PODS.group, PODS.plural): lambda obj, _old: defaults.pod(obj),
                (SERVICES.group, SERVICES.plural): defaults.ServiceDefaults(),
                (NAMESPACES.group, NAMESPACES.plural): lambda obj, _old: defaults.namespace(obj),
                (JOBS.group, JOBS.plural): job_defaults,
                (DAEMONSETS.group, DAEMONSETS.plural): lambda obj, _old: defaults.daemonset(obj),
                (STATEFULSETS.group, STATEFULSETS.plural): lambda obj, _old: defaults.statefulset(obj),
                (REPLICATION_CONTROLLERS.group, REPLICATION_CONTROLLERS.plural): lambda obj, _old: (
                    defaults.replication_controller(obj)
                ),
            }
        )
        self.store.initial_status.update(
            {
                (PODS.group, PODS.plural): lambda pod: {"phase": "Pending", "qosClass": qos_class(pod)},
                (SERVICES.group, SERVICES.plural): defaults.service_status,
                (DAEMONSETS.group, DAEMONSETS.plural): defaults.daemonset_status,
                (STATEFULSETS.group, STATEFULSETS.plural): defaults.statefulset_status,
                (REPLICATION_CONTROLLERS.group, REPLICATION_CONTROLLERS.plural): (
                    defaults.replication_controller_status
                ),
            }
        )
        self.workloads = WorkloadControllers(self.store, self.events)
        self.kubelet = Kubelet(
            store=self.store, events=self.events, logbook=self.logbook, runtime=runtime, seed=seed
        )
        self.replicasets = ReplicaSetController(self.store, self.events, self.kubelet.delete_pod)
        self.replication_controllers = ReplicaSetController(
            self.store,
            self.events,
            self.kubelet.delete_pod,
            kind=REPLICATION_CONTROLLERS,
            component="replication-controller",
        )
        self.daemonsets = DaemonSetController(self.store, self.events, self.kubelet.delete_pod)
        self.statefulsets = StatefulSetController(self.store, self.events, self.kubelet.delete_pod)
        self.jobs = JobController(self.store, self.events, self.kubelet.delete_pod)
        self.endpoints = EndpointsController(self.store)
        self.chaos = ChaosStatusController(self.store)
        self.namespace_defaults = NamespaceDefaultsController(self.store)
        self._last_expiry = start
        # Clients tell clusters apart by the kube-system namespace's uid. It is fresh from the OS unless
        # given, never seeded, so two twins of one seed are two clusters; kube-system cannot be deleted,
        # so the uid lasts as long as the twin.
        self.identity = identity if identity is not None else str(uuid.UUID(bytes=os.urandom(16), version=4))
        for namespace in ("default", "kube-system", "kube-public", "kube-node-lease", CHAOS_MESH_NAMESPACE):
            if namespace == SYSTEM_NAMESPACE:
                self.store.create(NAMESPACES, _namespace_object(namespace), uid=self.identity)
            else:
                self.ensure_namespace(namespace)
        self.namespace_defaults.sync()
        self._kubernetes_service()
        for index, node in enumerate(nodes):
            self.store.create(
                NODES, _node_object(node, index=index, cpu=node_cpu, memory=node_memory, now=start)
            )

    def _kubernetes_service(self) -> None:
        """The ``default/kubernetes`` Service every cluster has, pointing at the API server."""
        self.store.create(
            SERVICES,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": "10.96.0.1",
                    "ports": [{"name": "https", "port": 443, "targetPort": 6443}],
                },
            },
        )
        self.store.create(
            ENDPOINTS,
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                },
                "subsets": [
                    {
                        "addresses": [{"ip": "172.18.0.2"}],
                        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
                    }
                ],
            },
        )

    def ensure_namespace(self, name: str) -> None:
        with self.lock:
            if self.store.find(NAMESPACES, "", name) is None:
                self.store.create(NAMESPACES, _namespace_object(name))

    def apply_manifests(self, docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Create each document as ``kubectl apply`` would on an empty cluster; returns the stored objects.

        Namespaces a document names are created first, so a manifest set without its Namespace still
        applies. A document that already exists is replaced (its spec wins, its status is kept).
        """
        stored: list[dict[str, Any]] = []
        with self.lock:
            for doc in docs:
                if not doc:
                    continue
                rtype = resource_for(doc)
                body = _fresh(doc)
                meta = body.setdefault("metadata", {})
                if rtype.namespaced:
                    self.ensure_namespace(meta.get("namespace") or "default")
                existing = self.store.find(rtype, meta.get("namespace") or "default", meta.get("name", ""))
                if existing is None:
                    stored.append(self.store.create(rtype, body))
                else:
                    meta.pop("resourceVersion", None)
                    stored.append(self.store.replace(rtype, body))
        return stored

    def step(self, now: float) -> None:
        """Run every controller once at simulated time ``now`` (seconds since the twin epoch)."""
        with self.lock:
            self.now = now
            self.store.now = now
            self.kubelet.runtime = self.runtime
            self.workloads.collect_garbage(now, self.kubelet.delete_pod)
            self.workloads.reconcile_deployments(now)
            self.replicasets.reconcile(now)
            self.replication_controllers.reconcile(now)
            self.daemonsets.reconcile(now)
            self.statefulsets.reconcile(now)
            self.jobs.reconcile(now)
            self.kubelet.step(now)
            self.replicasets.update_status(now)
            self.replication_controllers.update_status(now)
            self.daemonsets.update_status(now)
            self.statefulsets.update_status(now)
            self.workloads.update_deployment_status(now)
            self.endpoints.sync(now)
            self.chaos.sync(now)
            self.namespace_defaults.sync()
            if now - self._last_expiry >= 60.0:
                self.events.expire(now)
                self._last_expiry = now

    def publish_root_ca(self, pem: str) -> None:
        """Put the CA the API server is served under in every namespace's ``kube-root-ca.crt``."""
        with self.lock:
            self.namespace_defaults.publish_root_ca(pem)
            self.namespace_defaults.sync()

    def delete_pod(self, namespace: str, name: str, *, graceful: bool = True) -> Obj:
        """Delete a pod as the API does (Killing events; Terminating for a moment when graceful)."""
        with self.lock:
            current = self.store.get(PODS, namespace, name)
            self.kubelet.delete_pod(current, self.now, immediately=not graceful)
            return self.store.find(PODS, namespace, name) or current


def _fresh(doc: dict[str, Any]) -> dict[str, Any]:
    """A private deep copy of a manifest document (JSON-shaped, so a structural copy is enough)."""
    return copy.deepcopy(doc)


def _namespace_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _node_object(node: Node, *, index: int, cpu: str, memory: str, now: float) -> dict[str, Any]:
    stamp = rfc3339(now)
    resources = {"cpu": cpu, "memory": memory, "pods": str(MAX_PODS_PER_NODE), "ephemeral-storage": "100Gi"}
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": node.zone,
            },
        },
        "spec": {"podCIDR": f"10.244.{index + 1}.0/24", "podCIDRs": [f"10.244.{index + 1}.0/24"]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {
                    "type": kind,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
                for kind, status, reason, message in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"172.18.0.{index + 2}"},
                {"type": "Hostname", "address": node.name},
            ],
            "nodeInfo": {
                "kubeletVersion": KUBERNETES_VERSION,
                "kubeProxyVersion": KUBERNETES_VERSION,
                "containerRuntimeVersion": "containerd://1.7.18",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-28-amd64",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": f"{index:032x}",
                "systemUUID": f"00000000-0000-0000-0000-{index:012x}",
                "bootID": f"00000000-0000-0000-0001-{index:012x}",
            },
        },
    }
