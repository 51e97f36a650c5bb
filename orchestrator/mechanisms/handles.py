"""What a mechanism leaves in the revert ledger (``Handle``) and what it needs from the cluster (``Context``).

A mechanism plans a handle (reading the pre-injection state, changing nothing), applies it and reverts it.
The handle is written to the revert ledger before anything is applied, so a crash at any point leaves enough
on disk to undo the fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.catalog.faults import Mechanism
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.cluster.fields import Value, selector_of


class Handle(BaseModel):
    """Everything needed to revert one injected fault, serialisable into the revert ledger."""

    model_config = ConfigDict(frozen=True)

    fault_id: str
    catalog_id: str
    mechanism: Mechanism
    kind: str
    namespace: str
    name: str
    field: str | None = None
    container: str | None = None
    pre_value: Value = None
    injected_value: Value = None
    pre_annotation: str | None = None
    # Services with pods where the fault acts beyond its target (a drained node's other pods), by app label.
    affected: tuple[str, ...] = ()
    # The responsible artifact as found at injection, when the entry leaves part of it to the cluster (the
    # zone a site outage takes down is the one its target runs in then); None: the entry's own artifact.
    artifact: str | None = None

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.namespace, self.name)


RevertOutcome = Literal["reverted", "already_restored", "changed_by_agent"]


@dataclass
class Context:
    """What a mechanism needs: the cluster, where the app and the chaos objects live, and a way to wait.

    ``settle`` lets the world move one tick (a stepped twin advances a few simulated seconds; a real cluster
    sleeps), so waiting for a rollout works the same on both.
    """

    client: KubeClient
    namespace: str
    chaos_namespace: str
    settle: Callable[[], None]
    settle_limit: int = 24


def same(left: Value, right: Value) -> bool:
    """Whether two field values are equal as the API writes them (``8080`` and ``"8080"`` are)."""
    return (None if left is None else str(left)) == (None if right is None else str(right))


def wait_rolled_out(ctx: Context, ref: ObjectRef) -> bool:
    """Settle until the workload (a Deployment or a StatefulSet) runs its current template somewhere; bounded
    by ``settle_limit``."""
    for _ in range(ctx.settle_limit):
        workload = ctx.client.read(ref)
        status = workload.get("status", {})
        generation = workload["metadata"].get("generation", 0)
        if status.get("observedGeneration", 0) >= generation and status.get("updatedReplicas", 0) >= 1:
            return True
        ctx.settle()
    return False


def release_stuck_pods(ctx: Context, ref: ObjectRef) -> None:
    """A StatefulSet's forced rollback: once the set has seen its restored template, delete each of its pods
    that runs an older revision and is not ready, which the set's ordered rollout would otherwise wait on
    forever (Kubernetes leaves this step to the operator). Side effects: reads, settles and pod deletions."""
    for _ in range(ctx.settle_limit):
        workload = ctx.client.read(ref)
        status = workload.get("status", {})
        if status.get("observedGeneration", 0) >= workload["metadata"].get("generation", 0):
            break
        ctx.settle()
    update = str(status.get("updateRevision") or "")
    for pod in ctx.client.list_pods(ref.namespace, selector=selector_of(workload)):
        labels = pod["metadata"].get("labels") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (pod.get("status") or {}).get("conditions") or []
        )
        if update and labels.get("controller-revision-hash") != update and not ready:
            ctx.client.delete(ObjectRef("Pod", ref.namespace, pod["metadata"]["name"]))
