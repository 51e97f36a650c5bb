"""What the controllers keep from one step to the next is dropped when an object changes through the API."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.twin.cluster import Cluster
from orchestrator.twin.controllers.workloads import owned_by
from orchestrator.twin.store import DEPLOYMENTS, ENDPOINTS, PODS, REPLICASETS
from tests.twin.api.support import NAMESPACE, deployment, fresh, pods_of, run, service


def edit(cluster: Cluster, obj: dict[str, Any], change: Any, kind: Any = PODS) -> None:
    current = json.loads(json.dumps(obj))
    change(current)
    cluster.store.replace(kind, current)


def test_the_owner_index_follows_a_pod_orphaned_through_the_api() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=2))
    run(cluster, 30)
    rs = cluster.store.list(REPLICASETS, NAMESPACE)[0]
    assert len(owned_by(cluster.store, PODS)[rs["metadata"]["uid"]]) == 2
    orphan = pods_of(cluster, "web")[0]
    edit(cluster, orphan, lambda p: p["metadata"].pop("ownerReferences"))
    assert len(owned_by(cluster.store, PODS)[rs["metadata"]["uid"]]) == 1
    run(cluster, 30)
    # The ReplicaSet counts the orphan out and makes up its number; the orphan keeps running.
    owned = owned_by(cluster.store, PODS, deleting=False)[rs["metadata"]["uid"]]
    assert len(owned) == 2 and orphan["metadata"]["uid"] not in {p["metadata"]["uid"] for p in owned}
    assert len(pods_of(cluster, "web")) == 3
    assert cluster.store.get(REPLICASETS, NAMESPACE, rs["metadata"]["name"])["status"]["readyReplicas"] == 2


def test_a_stuck_rollout_whose_deadline_is_shortened_through_the_api_exceeds_it() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0"))
    run(cluster, 20)
    current = cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")
    edit(
        cluster,
        current,
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="shop/frontend:broken"),
        DEPLOYMENTS,
    )
    run(cluster, 120)  # stuck, well within the default deadline of 600 s
    progressing = {
        c["type"]: c for c in cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")["status"]["conditions"]
    }["Progressing"]
    assert (progressing["status"], progressing["reason"]) == ("True", "NewReplicaSetCreated")
    edit(
        cluster,
        cluster.store.get(DEPLOYMENTS, NAMESPACE, "web"),
        lambda d: d["spec"].update(progressDeadlineSeconds=60),
        DEPLOYMENTS,
    )
    run(cluster, 5)
    progressing = {
        c["type"]: c for c in cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")["status"]["conditions"]
    }["Progressing"]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")


def test_a_pod_relabelled_through_the_api_moves_between_endpoints() -> None:
    cluster = fresh(
        None,
        deployment("web", image="shop/frontend:1.0"),
        service("web"),
        deployment("cart", image="shop/cart:1.0"),
        service("cart", 7070),
        deployment("redis", image="redis:7.2", probe=False),
    )
    run(cluster, 30)
    moved = pods_of(cluster, "cart")[0]
    # Changed first in the same step: a pod neither Service selects, with labels of its own.
    edit(cluster, pods_of(cluster, "redis")[0], lambda p: p["metadata"]["labels"].update(tier="cache"))
    edit(cluster, moved, lambda p: p["metadata"]["labels"].update(app="web"))
    cluster.step(cluster.now + 5)

    def ips(name: str) -> list[str]:
        subsets = cluster.store.get(ENDPOINTS, NAMESPACE, name).get("subsets") or [{}]
        return sorted(a["ip"] for a in subsets[0].get("addresses") or [])

    assert moved["status"]["podIP"] in ips("web") and len(ips("web")) == 2
    assert moved["status"]["podIP"] not in ips("cart")


def touch(cluster: Cluster) -> None:
    """A label no selector reads put on every web pod, then a step: controllers look at them again."""
    for pod in pods_of(cluster, "web"):
        edit(cluster, pod, lambda p: p["metadata"]["labels"].update(touched=str(cluster.now)))
    cluster.step(cluster.now + 5)


def test_a_replicaset_status_follows_its_pods_and_its_spec_changed_through_the_api() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=2))
    run(cluster, 60)
    name = cluster.store.list(REPLICASETS, NAMESPACE)[0]["metadata"]["name"]
    assert cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]["availableReplicas"] == 2
    touch(cluster)  # a status pass that writes nothing: the set is steady
    gone = pods_of(cluster, "web")[0]["metadata"]["name"]
    cluster.store.delete(PODS, NAMESPACE, gone)  # the set itself is not written
    cluster.step(cluster.now + 5)
    status = cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]
    assert (status["replicas"], status["readyReplicas"]) == (2, 1)  # its replacement is not ready yet
    run(cluster, 60)
    assert cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]["availableReplicas"] == 2
    touch(cluster)
    edit(
        cluster,
        cluster.store.get(REPLICASETS, NAMESPACE, name),
        lambda r: r["spec"].update(minReadySeconds=3600),
        REPLICASETS,
    )
    cluster.step(cluster.now + 5)
    status = cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]
    assert status["readyReplicas"] == 2 and "availableReplicas" not in status


def test_ready_pods_become_available_after_min_ready_seconds_with_nothing_else_changing() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=2, minReadySeconds=30))
    run(cluster, 20)
    name = cluster.store.list(REPLICASETS, NAMESPACE)[0]["metadata"]["name"]
    status = cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]
    assert status["readyReplicas"] == 2 and "availableReplicas" not in status
    run(cluster, 40)
    assert cluster.store.get(REPLICASETS, NAMESPACE, name)["status"]["availableReplicas"] == 2
