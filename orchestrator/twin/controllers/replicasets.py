"""The replicaset controller: keeps the number of owned pods at ``spec.replicas`` and reports status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.workloads import create_owned_pod, owned_by
from orchestrator.twin.resources import ResourceType
from orchestrator.twin.store import PODS, REPLICASETS, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339

DeletePod = Callable[[Obj, float], None]


def pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in _conditions(pod))


def ready_since(pod: Obj) -> float | None:
    for condition in _conditions(pod):
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return parse_rfc3339(condition["lastTransitionTime"])
    return None


def _conditions(pod: Obj) -> list[Obj]:
    return list((pod.get("status") or {}).get("conditions") or [])


def _deletion_rank(pod: Obj) -> tuple[int, int, int, int]:
    """Which pods a scale-down removes first, as upstream ranks them: the least useful, newest first."""
    status = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase", "Pending"), 0)
    restarts = sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or [])
    return (
        1 if pod["spec"].get("nodeName") else 0,
        phase_rank,
        1 if pod_ready(pod) else 0,
        -restarts,
    )


class ReplicaSetController:
    """Also the replication controller's part for ReplicationControllers (``kind``): the same loop upstream,
    keyed by a plain label selector instead of a LabelSelector."""

    def __init__(
        self,
        store: Store,
        events: EventRecorder,
        delete_pod: DeletePod,
        *,
        kind: ResourceType = REPLICASETS,
        component: str = "replicaset-controller",
    ) -> None:
        self.store = store
        self.events = events
        self.delete_pod = delete_pod
        self.kind = kind
        self.component = component
        self._reconciled = -1
        self._status_synced = -1
        # Per set, the versions of it and its pods at its last status pass that wrote nothing and found
        # every ready pod available: the same versions give the same status at any later time.
        self._steady: dict[str, tuple[str, tuple[str, ...]]] = {}

    def reconcile(self, now: float) -> None:
        if not self.store.changed_since(self._reconciled, PODS, self.kind):
            return
        by_owner = owned_by(self.store, PODS, deleting=False)
        for rs in self.store.list(self.kind):
            pods = by_owner.get(rs["metadata"]["uid"], [])
            wanted = int(rs["spec"].get("replicas", 1))
            if len(pods) < wanted:
                for _ in range(wanted - len(pods)):
                    self._create_pod(rs, now)
            elif len(pods) > wanted:
                newest_first = sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)
                ranked = sorted(newest_first, key=_deletion_rank)  # stable: ties keep newest first
                for pod in ranked[: len(pods) - wanted]:
                    self.delete_pod(pod, now)
                    self.events.record(
                        involved=rs,
                        reason="SuccessfulDelete",
                        now=now,
                        component=self.component,
                        message=f"Deleted pod: {pod['metadata']['name']}",
                    )
        self._reconciled = self.store.resource_version

    def _create_pod(self, rs: Obj, now: float) -> None:
        name = create_owned_pod(self.store, rs)
        self.events.record(
            involved=rs,
            reason="SuccessfulCreate",
            now=now,
            component=self.component,
            message=f"Created pod: {name}",
        )

    def update_status(self, now: float) -> None:
        waiting = any(r["spec"].get("minReadySeconds") for r in self.store.values(self.kind))
        if not waiting and not self.store.changed_since(self._status_synced, PODS, self.kind):
            return
        by_owner = owned_by(self.store, PODS, deleting=False)
        steady: dict[str, tuple[str, tuple[str, ...]]] = {}
        for rs in self.store.list(self.kind):
            uid = rs["metadata"]["uid"]
            pods = by_owner.get(uid, [])
            inputs = (
                rs["metadata"]["resourceVersion"],
                tuple(p["metadata"]["resourceVersion"] for p in pods),
            )
            if self._steady.get(uid) == inputs:
                steady[uid] = inputs
                continue
            min_ready = int(rs["spec"].get("minReadySeconds", 0))
            ready = [p for p in pods if pod_ready(p)]
            available = [p for p in ready if now - (ready_since(p) or now) >= min_ready]
            status: dict[str, Any] = {"replicas": len(pods)}
            if pods:
                status["fullyLabeledReplicas"] = len(pods)
            if ready:
                status["readyReplicas"] = len(ready)
            if available:
                status["availableReplicas"] = len(available)
            status["observedGeneration"] = rs["metadata"].get("generation", 1)
            if status != rs.get("status"):
                self.store.put(self.kind, {**rs, "status": status})
            elif len(available) == len(ready):  # time only makes more of the ready pods available
                steady[uid] = inputs
        self._steady = steady
        self._status_synced = self.store.resource_version
