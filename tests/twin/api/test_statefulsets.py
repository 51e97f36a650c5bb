"""StatefulSets on the twin: stable ordinal names, ordered start, reverse-order updates and scale-down, and
ControllerRevisions that ``kubectl rollout history|undo`` read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from orchestrator.twin.cluster import Cluster
from orchestrator.twin.store import CONTROLLER_REVISIONS, EVENTS, PODS, STATEFULSETS
from tests.twin.api.support import NAMESPACE, NODES, ScriptedRuntime, deployment, run, run_kubectl, serving


def statefulset(name: str, *, image: str, replicas: int = 3, **spec: Any) -> dict[str, Any]:
    made = deployment(name, image=image, replicas=replicas)
    made["kind"] = "StatefulSet"
    made["spec"].update({"serviceName": f"{name}-headless", **spec})
    return made


def fresh(*docs: dict[str, Any]) -> Cluster:
    made = Cluster(seed=5, nodes=NODES, runtime=ScriptedRuntime())
    made.apply_manifests([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, *docs])
    return made


def live_pods(cluster: Cluster) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in cluster.store.list(PODS, NAMESPACE)
        if not p["metadata"].get("deletionTimestamp")
    )


def status(cluster: Cluster, name: str = "db") -> dict[str, Any]:
    found: dict[str, Any] = cluster.store.get(STATEFULSETS, NAMESPACE, name)["status"]
    return found


def set_image(cluster: Cluster, image: str, name: str = "db") -> None:
    current = json.loads(json.dumps(cluster.store.get(STATEFULSETS, NAMESPACE, name)))
    current["spec"]["template"]["spec"]["containers"][0]["image"] = image
    cluster.store.replace(STATEFULSETS, current)


def test_pods_start_one_ordinal_at_a_time_each_after_the_one_before_is_ready() -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0"))
    seen: list[list[str]] = []
    for _ in range(12):
        run(cluster, 5)
        names = live_pods(cluster)
        if not seen or seen[-1] != names:
            seen.append(names)
    assert seen[0] == ["db-0"]
    assert seen[1] == ["db-0", "db-1"]
    assert seen[-1] == ["db-0", "db-1", "db-2"]
    pod = cluster.store.get(PODS, NAMESPACE, "db-2")
    assert pod["spec"]["hostname"] == "db-2"
    assert pod["spec"]["subdomain"] == "db-headless"
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-2"
    assert status(cluster)["readyReplicas"] == 3


def test_parallel_pods_start_together() -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0", podManagementPolicy="Parallel"))
    run(cluster, 5)
    assert live_pods(cluster) == ["db-0", "db-1", "db-2"]


def test_an_update_replaces_pods_from_the_highest_ordinal_down_and_moves_the_current_revision() -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0"))
    run(cluster, 90)
    first = status(cluster)["currentRevision"]
    set_image(cluster, "shop/frontend:1.1")
    deleted: list[str] = []
    for _ in range(60):
        run(cluster, 5)
        for event in cluster.store.list(EVENTS, NAMESPACE):
            if event["reason"] == "SuccessfulDelete" and event["message"] not in deleted:
                deleted.append(event["message"])
    assert [m.split()[2] for m in deleted] == ["db-2", "db-1", "db-0"]
    final = status(cluster)
    assert final["updateRevision"] != first
    assert final["currentRevision"] == final["updateRevision"]
    assert final["updatedReplicas"] == final["currentReplicas"] == 3
    images = {p["spec"]["containers"][0]["image"] for p in cluster.store.list(PODS, NAMESPACE)}
    assert images == {"shop/frontend:1.1"}
    revisions = sorted(r["revision"] for r in cluster.store.list(CONTROLLER_REVISIONS, NAMESPACE))
    assert revisions == [1, 2]


def test_a_partition_keeps_the_lower_ordinals_on_the_old_revision() -> None:
    partition = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    cluster = fresh(statefulset("db", image="shop/frontend:1.0", updateStrategy=partition))
    run(cluster, 90)
    set_image(cluster, "shop/frontend:1.1")
    run(cluster, 120)
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in cluster.store.list(PODS)}
    assert images == {"db-0": "shop/frontend:1.0", "db-1": "shop/frontend:1.0", "db-2": "shop/frontend:1.1"}


def test_scaling_down_removes_the_highest_ordinals_and_deleting_the_set_collects_everything() -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0"))
    run(cluster, 90)
    current = json.loads(json.dumps(cluster.store.get(STATEFULSETS, NAMESPACE, "db")))
    current["spec"]["replicas"] = 1
    cluster.store.replace(STATEFULSETS, current)
    run(cluster, 120)
    assert live_pods(cluster) == ["db-0"]
    cluster.store.delete(STATEFULSETS, NAMESPACE, "db")
    run(cluster, 60)
    assert live_pods(cluster) == []
    assert cluster.store.list(CONTROLLER_REVISIONS, NAMESPACE) == []


def test_a_deleted_pod_comes_back_under_the_same_name() -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0"))
    run(cluster, 90)
    uid = cluster.store.get(PODS, NAMESPACE, "db-1")["metadata"]["uid"]
    cluster.delete_pod(NAMESPACE, "db-1")
    run(cluster, 90)
    again = cluster.store.get(PODS, NAMESPACE, "db-1")
    assert again["metadata"]["uid"] != uid
    assert live_pods(cluster) == ["db-0", "db-1", "db-2"]


def test_kubectl_rollout_status_history_and_undo_of_a_statefulset(tmp_path: Path) -> None:
    cluster = fresh(statefulset("db", image="shop/frontend:1.0"))
    run(cluster, 90)
    set_image(cluster, "shop/frontend:1.1")
    run(cluster, 200)
    with serving(cluster, tmp_path) as server:
        history = run_kubectl(shutil.which("kubectl"), server, "rollout", "history", "statefulset/db")
        assert [line.split()[0] for line in history.stdout.splitlines()[2:] if line.strip()] == ["1", "2"]
        done = run_kubectl(
            shutil.which("kubectl"), server, "rollout", "status", "statefulset/db", "--timeout=5s"
        )
        assert "roll out complete" in done.stdout
        undo = run_kubectl(shutil.which("kubectl"), server, "rollout", "undo", "statefulset/db")
        assert "rolled back" in undo.stdout
    sts = cluster.store.get(STATEFULSETS, NAMESPACE, "db")
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "shop/frontend:1.0"
    run(cluster, 200)
    images = {p["spec"]["containers"][0]["image"] for p in cluster.store.list(PODS, NAMESPACE)}
    assert images == {"shop/frontend:1.0"}
    revisions = sorted(r["revision"] for r in cluster.store.list(CONTROLLER_REVISIONS, NAMESPACE))
    assert revisions == [2, 3]  # the old template, renumbered as the newest
