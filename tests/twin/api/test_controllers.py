"""Deployment, ReplicaSet and pod-lifecycle behaviour of the twin, driven directly through the Cluster."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.twin.cluster import Cluster
from orchestrator.twin.resources import RESOURCE_TYPES
from orchestrator.twin.store import DEPLOYMENTS, ENDPOINTS, EVENTS, NAMESPACES, REPLICASETS, SERVICES
from orchestrator.twin.store import NODES as NODE_OBJECTS
from tests.twin.api.support import (
    NAMESPACE,
    ScriptedRuntime,
    deployment,
    fresh,
    pods_of,
    run,
    service,
    shop_manifests,
)

REVISION = "deployment.kubernetes.io/revision"


def container_status(pod: dict[str, Any]) -> dict[str, Any]:
    statuses: list[dict[str, Any]] = pod["status"]["containerStatuses"]
    return statuses[0]


def set_template(cluster: Cluster, name: str, change: Any) -> None:
    current = json.loads(json.dumps(cluster.store.get(DEPLOYMENTS, NAMESPACE, name)))
    change(current["spec"]["template"])
    cluster.store.replace(DEPLOYMENTS, current)


def events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    return [e for e in cluster.store.list(EVENTS, NAMESPACE) if e["reason"] == reason]


def test_a_template_change_creates_a_second_replicaset_with_revision_and_hash() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=2))
    run(cluster, 20)
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.1"))
    run(cluster, 60)
    sets = sorted(
        cluster.store.list(REPLICASETS, NAMESPACE), key=lambda r: r["metadata"]["annotations"][REVISION]
    )
    assert [r["metadata"]["annotations"][REVISION] for r in sets] == ["1", "2"]
    assert [r["spec"]["replicas"] for r in sets] == [0, 2]
    digest = sets[1]["spec"]["template"]["metadata"]["labels"]["pod-template-hash"]
    assert sets[1]["metadata"]["name"] == f"web-{digest}"
    assert all(p["metadata"]["name"].startswith(f"web-{digest}-") for p in pods_of(cluster, "web"))
    status = cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")["status"]
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "NewReplicaSetAvailable"


def test_a_rolling_update_respects_max_surge_and_max_unavailable() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=4))
    run(cluster, 30)
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.1"))
    totals, available = [], []
    for _ in range(30):
        run(cluster, 5)
        pods = [p for p in pods_of(cluster, "web") if not p["metadata"].get("deletionTimestamp")]
        totals.append(len(pods))
        status = cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")["status"]
        available.append(status.get("availableReplicas", 0))
    assert max(totals) == 5  # 25% of 4 surges one pod
    assert min(available) >= 3  # and 25% of 4 lets one be unavailable
    images = {p["spec"]["containers"][0]["image"] for p in pods_of(cluster, "web")}
    assert images == {"shop/frontend:1.1"}


def test_reapplying_an_old_template_reuses_its_replicaset_as_the_newest_revision() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0"))
    run(cluster, 20)
    first = cluster.store.list(REPLICASETS, NAMESPACE)[0]["metadata"]["name"]
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.1"))
    run(cluster, 30)
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.0"))
    run(cluster, 30)
    reused = cluster.store.get(REPLICASETS, NAMESPACE, first)
    assert reused["metadata"]["annotations"][REVISION] == "3"
    assert reused["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert reused["spec"]["replicas"] == 1
    assert len(cluster.store.list(REPLICASETS, NAMESPACE)) == 2


def test_revision_history_limit_prunes_the_oldest_idle_replicasets() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", revisionHistoryLimit=1))
    run(cluster, 20)
    for version in ("v2", "v3", "v4"):
        set_template(
            cluster,
            "web",
            lambda t, v=version: t["spec"]["containers"][0]["env"].append({"name": "RELEASE", "value": v}),
        )
        run(cluster, 40)
    revisions = sorted(
        int(r["metadata"]["annotations"][REVISION]) for r in cluster.store.list(REPLICASETS, NAMESPACE)
    )
    assert revisions == [3, 4]


def test_a_crashing_container_restarts_with_exponential_backoff() -> None:
    runtime = ScriptedRuntime(crashing={"shop/cart:1.0"})
    cluster = fresh(runtime, deployment("cart", image="shop/cart:1.0"))
    messages: list[str] = []
    restarts: list[tuple[float, int]] = []
    for _ in range(180):
        run(cluster, 5)
        status = container_status(pods_of(cluster, "cart")[0])
        waiting = status["state"].get("waiting", {})
        if waiting.get("reason") == "CrashLoopBackOff" and waiting["message"].split()[1] not in messages:
            messages.append(waiting["message"].split()[1])
        if not restarts or restarts[-1][1] != status["restartCount"]:
            restarts.append((cluster.now, status["restartCount"]))
    assert messages[:6] == ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s"]
    gaps = [b[0] - a[0] for a, b in zip(restarts[1:], restarts[2:], strict=False)]
    assert gaps[:5] == [10.0, 20.0, 40.0, 80.0, 160.0]  # the first restart is immediate, as the kubelet's
    assert max(gaps) == 300.0
    pod = pods_of(cluster, "cart")[0]
    terminated = container_status(pod)["lastState"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("Error", 1)
    assert terminated["message"] == "panic: cannot connect to redis"
    assert pod["status"]["phase"] == "Running"
    assert events(cluster, "BackOff")[0]["type"] == "Warning"


def test_an_oom_killed_container_shows_its_last_state_and_a_node_event() -> None:
    runtime = ScriptedRuntime(oom={"shop/cart:1.0"})
    cluster = fresh(runtime, deployment("cart", image="shop/cart:1.0"))
    run(cluster, 30)
    status = container_status(pods_of(cluster, "cart")[0])
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["restartCount"] >= 1
    node_events = [e for e in cluster.store.list(EVENTS, "default") if e["reason"] == "OOMKilling"]
    assert node_events and node_events[0]["involvedObject"]["kind"] == "Node"


def test_an_unknown_image_is_err_image_pull_then_image_pull_backoff() -> None:
    cluster = fresh(None, deployment("cart", image="shop/cart:missing"))
    run(cluster, 10)
    first = container_status(pods_of(cluster, "cart")[0])["state"]["waiting"]["reason"]
    run(cluster, 5)
    second = container_status(pods_of(cluster, "cart")[0])["state"]["waiting"]["reason"]
    assert (first, second) == ("ErrImagePull", "ImagePullBackOff")
    assert pods_of(cluster, "cart")[0]["status"]["phase"] == "Pending"
    assert any("not found" in e["message"] for e in events(cluster, "Failed"))


def test_an_unschedulable_pod_stays_pending_with_a_failed_scheduling_event() -> None:
    runtime = ScriptedRuntime(too_big={"shop/cart:1.0"})
    cluster = fresh(runtime, deployment("cart", image="shop/cart:1.0"))
    run(cluster, 30)
    pod = pods_of(cluster, "cart")[0]
    assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
    scheduled = pod["status"]["conditions"][0]
    assert (scheduled["type"], scheduled["reason"]) == ("PodScheduled", "Unschedulable")
    assert events(cluster, "FailedScheduling")[0]["message"].startswith("0/3 nodes are available")


def test_requests_larger_than_any_node_leave_a_pod_pending() -> None:
    big = deployment("cart", image="shop/cart:1.0")
    big["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "64Gi"}}
    cluster = fresh(None, big)
    run(cluster, 15)
    assert "Insufficient memory" in events(cluster, "FailedScheduling")[0]["message"]


def test_replicas_spread_over_nodes_and_zones() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=3))
    run(cluster, 10)
    nodes = {p["spec"]["nodeName"] for p in pods_of(cluster, "web")}
    zones = {
        cluster.store.get(NODE_OBJECTS, "", n)["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for n in nodes
    }
    assert len(nodes) == 3 and zones == {"zone-a", "zone-b"}


def test_a_stuck_rollout_reports_progress_deadline_exceeded() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", progressDeadlineSeconds=60))
    run(cluster, 20)
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:broken"))
    run(cluster, 120)
    conditions = {
        c["type"]: c for c in cluster.store.get(DEPLOYMENTS, NAMESPACE, "web")["status"]["conditions"]
    }
    assert (conditions["Progressing"]["status"], conditions["Progressing"]["reason"]) == (
        "False",
        "ProgressDeadlineExceeded",
    )
    assert conditions["Available"]["status"] == "True"  # the old pod still serves


def test_a_restarted_at_annotation_rolls_the_pods() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0"))
    run(cluster, 20)
    before = {p["metadata"]["name"] for p in pods_of(cluster, "web")}
    set_template(
        cluster,
        "web",
        lambda t: (
            t["metadata"]
            .setdefault("annotations", {})
            .update({"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:20Z"})
        ),
    )
    run(cluster, 40)
    after = {p["metadata"]["name"] for p in pods_of(cluster, "web")}
    assert len(after) == 1 and not before & after


def test_endpoints_hold_ready_pods_and_unready_ones_apart() -> None:
    runtime = ScriptedRuntime(unready={"shop/cart:1.0"})
    cluster = fresh(
        runtime,
        deployment("web", image="shop/frontend:1.0"),
        service("web"),
        deployment("cart", image="shop/cart:1.0"),
        service("cart", 7070),
    )
    run(cluster, 20)
    web = cluster.store.get(ENDPOINTS, NAMESPACE, "web")["subsets"][0]
    cart = cluster.store.get(ENDPOINTS, NAMESPACE, "cart")["subsets"][0]
    assert len(web["addresses"]) == 1 and "notReadyAddresses" not in web
    assert web["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]
    assert len(cart["notReadyAddresses"]) == 1 and "addresses" not in cart
    assert any(e["message"].startswith("Readiness probe failed") for e in events(cluster, "Unhealthy"))


def test_deleting_a_deployment_collects_its_replicasets_and_pods() -> None:
    cluster = fresh(None, deployment("web", image="shop/frontend:1.0", replicas=2))
    run(cluster, 20)
    cluster.store.delete(DEPLOYMENTS, NAMESPACE, "web")
    run(cluster, 10)
    assert cluster.store.list(REPLICASETS, NAMESPACE) == [] and pods_of(cluster, "web") == []


def test_a_settled_cluster_writes_nothing_when_stepped() -> None:
    cluster = fresh(None, *shop_manifests()[1:])
    run(cluster, 30)
    version = cluster.store.resource_version
    run(cluster, 300)
    assert cluster.store.resource_version == version


def test_two_clusters_given_the_same_calls_hold_identical_objects_but_their_own_identity() -> None:
    identities = []

    def world() -> str:
        cluster = fresh(ScriptedRuntime(crashing={"shop/cart:1.1"}), *shop_manifests()[1:])
        run(cluster, 30)
        set_template(cluster, "cart", lambda t: t["spec"]["containers"][0].update(image="shop/cart:1.1"))
        run(cluster, 120)
        identities.append(cluster.identity)
        system = cluster.store.get(NAMESPACES, "", "kube-system")
        assert system["metadata"]["uid"] == cluster.identity
        text = json.dumps({r.plural: cluster.store.list(r) for r in RESOURCE_TYPES}, sort_keys=True)
        return text.replace(cluster.identity, "<identity>")

    first, second = world(), world()
    assert first == second
    assert '"restartCount": 0' in first and "CrashLoopBackOff" in first
    assert first.count("<identity>") == 1  # only kube-system's uid names the cluster
    assert identities[0] != identities[1]


def test_services_get_cluster_ips_in_order_and_node_ports_that_survive_updates() -> None:
    exposed = service("web")
    exposed["spec"]["type"] = "NodePort"
    cluster = fresh(None, service("cart", 7070), exposed)
    cart = cluster.store.get(SERVICES, NAMESPACE, "cart")
    web = cluster.store.get(SERVICES, NAMESPACE, "web")
    assert (cart["spec"]["clusterIP"], web["spec"]["clusterIP"]) == ("10.96.0.11", "10.96.0.12")
    assert web["spec"]["ports"][0]["nodePort"] == 30000
    again = json.loads(json.dumps(web))
    del again["spec"]["ports"][0]["nodePort"]
    assert cluster.store.replace(SERVICES, again)["spec"]["ports"][0]["nodePort"] == 30000
    assert cluster.store.get(SERVICES, "default", "kubernetes")["spec"]["clusterIP"] == "10.96.0.1"


def test_the_first_crash_is_the_last_state_of_the_immediate_restart() -> None:
    runtime = ScriptedRuntime()
    cluster = fresh(runtime, deployment("cart", image="shop/cart:1.0"))
    run(cluster, 20)
    runtime.oom.add("shop/cart:1.0")
    run(cluster, 5)
    assert container_status(pods_of(cluster, "cart")[0])["state"]["terminated"]["reason"] == "OOMKilled"
    runtime.oom.clear()
    run(cluster, 5)
    status = container_status(pods_of(cluster, "cart")[0])
    assert "running" in status["state"] and status["restartCount"] == 1
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"


def test_a_failing_liveness_probe_kills_the_container_after_its_threshold() -> None:
    runtime = ScriptedRuntime()
    hung = deployment("cart", image="shop/cart:1.0")
    hung["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] = {
        "httpGet": {"path": "/healthz", "port": 8080},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    cluster = fresh(runtime, hung)
    run(cluster, 20)
    runtime.hung.add("shop/cart:1.0")
    run(cluster, 15)
    assert "running" in container_status(pods_of(cluster, "cart")[0])["state"]  # failed at 25 s and 35 s
    run(cluster, 10)  # the third failure, at 45 s, reaches failureThreshold
    status = container_status(pods_of(cluster, "cart")[0])
    assert (status["state"]["terminated"]["exitCode"], status["state"]["terminated"]["reason"]) == (
        137,
        "Error",
    )
    assert any("failed liveness probe" in e["message"] for e in events(cluster, "Killing"))
    assert any(e["message"].startswith("Liveness probe failed") for e in events(cluster, "Unhealthy"))


def test_repeated_events_aggregate_and_old_ones_expire() -> None:
    cluster = fresh(ScriptedRuntime(), deployment("cart", image="shop/cart:missing"))
    run(cluster, 60)
    backoffs = [e for e in events(cluster, "BackOff") if "pulling image" in e["message"]]
    assert len(backoffs) == 1 and backoffs[0]["count"] > 3
    assert backoffs[0]["firstTimestamp"] < backoffs[0]["lastTimestamp"]
    cluster.store.delete(DEPLOYMENTS, NAMESPACE, "cart")
    run(cluster, 3700)
    assert cluster.store.list(EVENTS, NAMESPACE) == []


def test_rolling_back_a_stuck_rollout_keeps_the_serving_pod() -> None:
    cluster = fresh(
        ScriptedRuntime(crashing={"shop/frontend:1.1"}), deployment("web", image="shop/frontend:1.0")
    )
    run(cluster, 20)
    serving = pods_of(cluster, "web")[0]["metadata"]["name"]
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.1"))
    run(cluster, 60)
    assert len(pods_of(cluster, "web")) == 2  # the new pod crash-loops; maxUnavailable 0 keeps the old one
    set_template(cluster, "web", lambda t: t["spec"]["containers"][0].update(image="shop/frontend:1.0"))
    run(cluster, 15)
    assert [p["metadata"]["name"] for p in pods_of(cluster, "web")] == [serving]
    replicas = {
        r["metadata"]["annotations"][REVISION]: r["spec"]["replicas"]
        for r in cluster.store.list(REPLICASETS, NAMESPACE)
    }
    assert replicas == {"3": 1, "2": 0}
