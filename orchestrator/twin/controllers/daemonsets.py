"""The daemonset controller: one pod of each DaemonSet on every node, and the DaemonSet's status.

Simplified from upstream: each pod is created bound to its node (``spec.nodeName``, as the controller did
before scheduling moved to the default scheduler), and a changed template does not roll existing pods.
"""

from __future__ import annotations

from typing import Any

from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.replicasets import DeletePod, pod_ready
from orchestrator.twin.controllers.workloads import create_owned_pod, owned_by
from orchestrator.twin.store import DAEMONSETS, NODES, PODS, Obj, Store

COMPONENT = "daemonset-controller"


class DaemonSetController:
    def __init__(self, store: Store, events: EventRecorder, delete_pod: DeletePod) -> None:
        self.store = store
        self.events = events
        self.delete_pod = delete_pod
        self._reconciled = -1
        self._status_synced = -1

    def _owned(self) -> dict[str, list[Obj]]:
        return owned_by(self.store, PODS, deleting=False)

    def reconcile(self, now: float) -> None:
        if not self.store.changed_since(self._reconciled, PODS, NODES, DAEMONSETS):
            return
        nodes = [n["metadata"]["name"] for n in self.store.list(NODES)]
        by_owner = self._owned()
        for ds in self.store.list(DAEMONSETS):
            placed: dict[str, Obj] = {}
            for pod in by_owner.get(ds["metadata"]["uid"], []):
                node = pod["spec"].get("nodeName") or ""
                if node in nodes and node not in placed:
                    placed[node] = pod
                else:  # on a node that is gone, or a second pod on one node
                    self.delete_pod(pod, now)
                    self._record(ds, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}", now)
            for node in nodes:
                if node not in placed:
                    self._create_pod(ds, node, now)
        self._reconciled = self.store.resource_version

    def _create_pod(self, ds: Obj, node: str, now: float) -> None:
        name = create_owned_pod(self.store, ds, node=node)
        self._record(ds, "SuccessfulCreate", f"Created pod: {name}", now)

    def _record(self, ds: Obj, reason: str, message: str, now: float) -> None:
        self.events.record(involved=ds, reason=reason, now=now, component=COMPONENT, message=message)

    def update_status(self, now: float) -> None:
        if not self.store.changed_since(self._status_synced, PODS, NODES, DAEMONSETS):
            return
        nodes = {n["metadata"]["name"] for n in self.store.values(NODES)}
        by_owner = self._owned()
        for ds in self.store.list(DAEMONSETS):
            pods = [p for p in by_owner.get(ds["metadata"]["uid"], []) if p["spec"].get("nodeName") in nodes]
            ready = sum(1 for p in pods if pod_ready(p))
            status: dict[str, Any] = {
                "currentNumberScheduled": len(pods),
                "numberMisscheduled": 0,
                "desiredNumberScheduled": len(nodes),
                "numberReady": ready,
                "observedGeneration": ds["metadata"].get("generation", 1),
                "updatedNumberScheduled": len(pods),
            }
            if ready:
                status["numberAvailable"] = ready
            if len(nodes) > ready:
                status["numberUnavailable"] = len(nodes) - ready
            if status != ds.get("status"):
                self.store.put(DAEMONSETS, {**ds, "status": status})
        self._status_synced = self.store.resource_version
