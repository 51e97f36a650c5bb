"""Snapshots of the app's workloads at the run's start and end, for docs/metrics.md's collateral check:
per Deployment and StatefulSet its images, a hash of its containers' settings and its replica count.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Literal

from orchestrator.bundle.records import Record, ServiceStates, WorkloadState
from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ClusterError
from orchestrator.run.events import Failed, RunEventHandler

WORKLOAD_KINDS: tuple[Literal["Deployment", "StatefulSet"], ...] = ("Deployment", "StatefulSet")
# A container's configuration: everything in its manifest but its image (the version, compared on its own).
CONFIG_FIELDS = (
    "command",
    "args",
    "env",
    "envFrom",
    "ports",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
)


def workload_state(kind: Literal["Deployment", "StatefulSet"], obj: dict[str, Any]) -> WorkloadState:
    """One workload object as its snapshot keeps it (no side effects)."""
    containers = obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    settings = {
        str(c.get("name", "")): {key: c[key] for key in CONFIG_FIELDS if c.get(key) not in (None, [], {})}
        for c in containers
    }
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    replicas = obj.get("spec", {}).get("replicas")
    return WorkloadState(
        kind=kind,
        name=obj["metadata"]["name"],
        images={str(c.get("name", "")): str(c.get("image", "")) for c in containers},
        config_sha256=hashlib.sha256(canonical.encode()).hexdigest(),
        replicas=1 if replicas is None else int(replicas),  # the API server's default
    )


def service_states(
    client: KubeClient, namespace: str, *, moment: Literal["start", "end"], t: float
) -> ServiceStates:
    """Every Deployment and StatefulSet of ``namespace`` as the cluster holds it now (reads the cluster)."""
    workloads = [
        workload_state(kind, obj)
        for kind in WORKLOAD_KINDS
        for obj in client.list_objects(kind, namespace=namespace)
    ]
    return ServiceStates(moment=moment, t=t, workloads=workloads)


def record_service_states(
    client: KubeClient,
    namespace: str,
    *,
    moment: Literal["start", "end"],
    t: float,
    record: Callable[[Record], object],
    events: RunEventHandler,
) -> None:
    """Journal the snapshot; a cluster that cannot be read leaves none (the scorer then says collateral is
    unknown) and the run goes on."""
    try:
        snapshot = service_states(client, namespace, moment=moment, t=t)
    except (ClusterError, ValueError) as exc:  # unreadable, or an object the snapshot cannot describe
        events.handle(Failed(operation="observation", error=f"{moment} snapshot of the workloads: {exc}"))
        return
    record(snapshot)
