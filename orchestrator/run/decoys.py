"""The schedule's decoys applied to the cluster: harmless changes of a service no active fault touches.

A ``redeploy`` rolls the workload out again as ``kubectl rollout restart`` does (the restartedAt annotation
on its pod template), a ``config`` edit switches its main container's ``LOG_LEVEL`` between ``info`` and
``debug``; both with a change cause, so the rollout history shows a recent, explained change that broke
nothing. Each is journalled with the workload as it stood after it (docs/metrics.md, "Decoys").
"""

from __future__ import annotations

from orchestrator.bundle.records import DecoyApplied
from orchestrator.catalog.topology import Topology
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.cluster.fields import CHANGE_CAUSE, field_patch, read_field, restart_patch
from orchestrator.run.states import workload_state
from orchestrator.schedule import Decoy

LOG_LEVEL = "LOG_LEVEL"


def apply_decoy(
    client: KubeClient, decoy: Decoy, *, topology: Topology, t: float, epoch_s: float
) -> DecoyApplied:
    """Make ``decoy``'s change at schedule time ``t`` (``epoch_s`` in the cluster's clock); the record of it.
    Side effects: a read and a patch of the target's workload."""
    service = topology.service(decoy.target)
    ref = ObjectRef(service.workload, topology.namespace, decoy.target)
    current = client.read(ref)
    if decoy.change == "redeploy":
        patch, stamp = restart_patch(epoch_s)
        detail = f"rolled out again at {stamp}"
    else:
        before = read_field(current, field=f"env/{LOG_LEVEL}", container=service.container_name)
        level = "info" if before == "debug" else "debug"
        patch = field_patch(current, field=f"env/{LOG_LEVEL}", value=level, container=service.container_name)
        detail = f"{LOG_LEVEL}={level}"
    patch.body["metadata"] = {"annotations": {CHANGE_CAUSE: f"{decoy.target}: {detail}"}}
    after = client.patch(ref, patch)
    return DecoyApplied(
        t=t,
        index=decoy.index,
        change=decoy.change,
        target=decoy.target,
        detail=detail,
        workload=workload_state(service.workload, after),
    )
