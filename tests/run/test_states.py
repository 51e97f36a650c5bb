"""The workload snapshots the runner journals at the run's start and end, for the collateral check."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from orchestrator.bundle.records import Record, ServiceStates
from orchestrator.errors import ClusterError
from orchestrator.run.events import Failed, RunEvent
from orchestrator.run.states import record_service_states, workload_state


def _deployment(name: str = "emailservice") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"annotations": {}},
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "emailservice:v1",
                            "env": [{"name": "PORT", "value": "8080"}],
                            "ports": [{"containerPort": 8080}],
                        }
                    ]
                },
            },
        },
        "status": {"readyReplicas": 2},
    }


def test_a_workload_state_keeps_images_replicas_and_a_hash_that_changes_with_configuration_only() -> None:
    base = _deployment()
    state = workload_state("Deployment", base)
    assert (state.name, state.images, state.replicas) == ("emailservice", {"server": "emailservice:v1"}, 2)

    restarted = copy.deepcopy(base)  # a rollout restart, a new revision, a status change: not configuration
    restarted["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "now"
    restarted["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "2"
    restarted["status"] = {"readyReplicas": 0}
    assert workload_state("Deployment", restarted) == state

    changed = copy.deepcopy(base)
    changed["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "9090"
    other = workload_state("Deployment", changed)
    assert other.config_sha256 != state.config_sha256
    assert (other.images, other.replicas) == (state.images, state.replicas)

    unset = copy.deepcopy(base)
    del unset["spec"]["replicas"]
    assert workload_state("Deployment", unset).replicas == 1  # the API server's default


@dataclass
class _Client:
    objects: dict[str, list[dict[str, Any]]]
    broken: bool = False

    def list_objects(self, kind: str, *, namespace: str | None = None) -> list[dict[str, Any]]:
        if self.broken:
            raise ClusterError("list Deployment in online-boutique: cannot reach the API server")
        return self.objects.get(kind, [])


@dataclass
class _Events:
    seen: list[RunEvent] = field(default_factory=list)

    def handle(self, event: RunEvent) -> None:
        self.seen.append(event)


def test_the_snapshot_lists_deployments_and_statefulsets_in_order_and_an_unread_one_is_left_out() -> None:
    records: list[Record] = []
    events = _Events()
    client = _Client({"Deployment": [_deployment("frontend"), _deployment("adservice")],
                      "StatefulSet": [_deployment("redis-cart")]})  # fmt: skip
    record_service_states(
        client, "online-boutique", moment="start", t=0.0, record=records.append, events=events,  # type: ignore[arg-type]
    )  # fmt: skip
    (snapshot,) = records
    assert isinstance(snapshot, ServiceStates) and snapshot.moment == "start"
    assert [(w.kind, w.name) for w in snapshot.workloads] == [
        ("Deployment", "adservice"),
        ("Deployment", "frontend"),
        ("StatefulSet", "redis-cart"),
    ]
    assert events.seen == []

    broken = _Client({}, broken=True)
    record_service_states(
        broken, "online-boutique", moment="end", t=1800.0, record=records.append, events=events,  # type: ignore[arg-type]
    )  # fmt: skip
    assert len(records) == 1
    (failed,) = events.seen
    assert isinstance(failed, Failed) and failed.operation == "observation"
    assert "end snapshot" in failed.error
