"""The official Kubernetes Python client, unchanged, against the twin's API server."""

from __future__ import annotations

import json

import httpx
from kubernetes import client, watch

from orchestrator.twin.store import DEPLOYMENTS
from tests.twin.api.support import NAMESPACE, LiveServer, api_error, run

NETWORK_CHAOS = {
    "apiVersion": "chaos-mesh.org/v1alpha1",
    "kind": "NetworkChaos",
    "metadata": {"name": "cart-delay", "namespace": NAMESPACE},
    "spec": {
        "action": "delay",
        "mode": "all",
        "duration": "5m",
        "selector": {"namespaces": [NAMESPACE], "labelSelectors": {"app": "cart"}},
        "delay": {"latency": "200ms"},
    },
}


def test_pods_are_listed_running_with_owner_references(api: client.ApiClient) -> None:
    pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
    assert len(pods) == 4
    assert {p.status.phase for p in pods} == {"Running"}
    assert all(p.metadata.owner_references[0].kind == "ReplicaSet" for p in pods)
    assert all(p.status.pod_ip.startswith("10.244.") for p in pods)


def test_set_based_label_and_field_selectors_filter_pods(api: client.ApiClient, server: LiveServer) -> None:
    core = client.CoreV1Api(api)
    chosen = core.list_namespaced_pod(NAMESPACE, label_selector="app in (cart,redis)").items
    assert sorted(p.metadata.labels["app"] for p in chosen) == ["cart", "redis"]
    assert len(core.list_namespaced_pod(NAMESPACE, label_selector="app notin (cart),app").items) == 3
    node = chosen[0].spec.node_name
    on_node = core.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName={node},status.phase=Running"
    ).items
    assert chosen[0].metadata.name in {p.metadata.name for p in on_node}
    assert all(p.spec.node_name == node for p in on_node)


def test_strategic_merge_patch_of_env_rolls_out_revision_two(
    api: client.ApiClient, server: LiveServer
) -> None:
    apps = client.AppsV1Api(api)
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "server", "env": [{"name": "CART_ADDR", "value": "cart:7071"}]}]
                }
            }
        }
    }
    patched = apps.patch_namespaced_deployment("frontend", NAMESPACE, patch)
    env = {e.name: e.value for e in patched.spec.template.spec.containers[0].env}
    assert env == {"PORT": "8080", "CART_ADDR": "cart:7071"}  # merged by name, not replaced
    assert patched.metadata.generation == 2
    with server.cluster.lock:
        run(server.cluster, 60)
    sets = apps.list_namespaced_replica_set(NAMESPACE, label_selector="app=frontend").items
    revisions = sorted(int(rs.metadata.annotations["deployment.kubernetes.io/revision"]) for rs in sets)
    assert revisions == [1, 2]
    deployment = apps.read_namespaced_deployment("frontend", NAMESPACE)
    assert deployment.status.observed_generation == 2
    assert deployment.status.updated_replicas == 2
    assert deployment.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE, label_selector="app=frontend").items
    assert {e.value for p in pods for e in p.spec.containers[0].env if e.name == "CART_ADDR"} == {"cart:7071"}


def test_scale_subresource_is_read_and_patched(api: client.ApiClient, server: LiveServer) -> None:
    apps = client.AppsV1Api(api)
    scale = apps.read_namespaced_deployment_scale("frontend", NAMESPACE)
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=frontend")
    apps.patch_namespaced_deployment_scale("frontend", NAMESPACE, {"spec": {"replicas": 3}})
    with server.cluster.lock:
        run(server.cluster, 20)
    assert apps.read_namespaced_deployment("frontend", NAMESPACE).status.ready_replicas == 3


def test_network_chaos_is_created_listed_patched_and_deleted(
    api: client.ApiClient, server: LiveServer
) -> None:
    custom = client.CustomObjectsApi(api)
    args = ("chaos-mesh.org", "v1alpha1", NAMESPACE, "networkchaos")
    created = custom.create_namespaced_custom_object(*args, NETWORK_CHAOS)
    assert created["metadata"]["uid"]
    with server.cluster.lock:
        run(server.cluster, 5)
    listed = custom.list_namespaced_custom_object(*args)["items"]
    assert [o["metadata"]["name"] for o in listed] == ["cart-delay"]
    conditions = {c["type"]: c["status"] for c in listed[0]["status"]["conditions"]}
    assert conditions["AllInjected"] == "True"
    custom.patch_namespaced_custom_object(
        *args, "cart-delay", {"spec": {"duration": "1m"}}, _content_type="application/merge-patch+json"
    )
    assert custom.get_namespaced_custom_object(*args, "cart-delay")["spec"]["duration"] == "1m"
    custom.delete_namespaced_custom_object(*args, "cart-delay")
    assert custom.list_namespaced_custom_object(*args)["items"] == []


def test_pod_logs_honour_tail_timestamps_and_previous(api: client.ApiClient, server: LiveServer) -> None:
    core = client.CoreV1Api(api)
    pod = core.list_namespaced_pod(NAMESPACE, label_selector="app=cart").items[0].metadata.name
    for second, text in ((10.0, "starting"), (15.0, "listening on :7070"), (19.5, "served GET /cart")):
        server.cluster.logbook.append(namespace=NAMESPACE, pod=pod, container="server", t=second, line=text)
    assert core.read_namespaced_pod_log(pod, NAMESPACE) == "starting\nlistening on :7070\nserved GET /cart\n"
    tail = core.read_namespaced_pod_log(pod, NAMESPACE, tail_lines=1, timestamps=True)
    assert tail == "2026-01-01T00:00:19.500000000Z served GET /cart\n"
    assert core.read_namespaced_pod_log(pod, NAMESPACE, since_seconds=1) == "served GET /cart\n"
    assert api_error(lambda: core.read_namespaced_pod_log(pod, NAMESPACE, since_seconds=0)).status == 422
    assert api_error(lambda: core.read_namespaced_pod_log(pod, NAMESPACE, previous=True)).status == 400
    assert api_error(lambda: core.read_namespaced_pod_log(pod, NAMESPACE, container="nope")).status == 400


def test_missing_duplicate_and_stale_objects_are_404_409_409(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    missing = api_error(lambda: apps.read_namespaced_deployment("nope", NAMESPACE))
    assert (missing.status, json.loads(missing.body)["reason"]) == (404, "NotFound")
    current = apps.read_namespaced_deployment("cart", NAMESPACE)
    duplicate = api_error(
        lambda: apps.create_namespaced_deployment(
            NAMESPACE, api.sanitize_for_serialization(current) | {"metadata": {"name": "cart"}}
        )
    )
    assert (duplicate.status, json.loads(duplicate.body)["reason"]) == (409, "AlreadyExists")
    apps.patch_namespaced_deployment("cart", NAMESPACE, {"metadata": {"labels": {"tier": "backend"}}})
    stale = api_error(lambda: apps.replace_namespaced_deployment("cart", NAMESPACE, current))
    assert (stale.status, json.loads(stale.body)["reason"]) == (409, "Conflict")


def test_invalid_objects_are_422_with_causes_and_change_nothing(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    before = apps.read_namespaced_deployment("cart", NAMESPACE).metadata.resource_version
    negative = api_error(
        lambda: apps.patch_namespaced_deployment("cart", NAMESPACE, {"spec": {"replicas": -1}})
    )
    status = json.loads(negative.body)
    assert (negative.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec.replicas"
    bad_scale = api_error(
        lambda: apps.patch_namespaced_deployment_scale("cart", NAMESPACE, {"spec": {"replicas": -2}})
    )
    assert bad_scale.status == 422
    assert apps.read_namespaced_deployment("cart", NAMESPACE).metadata.resource_version == before
    bad_name = {"metadata": {"name": "Bad_Name"}, "data": {"a": "b"}}
    invalid = api_error(lambda: client.CoreV1Api(api).create_namespaced_config_map(NAMESPACE, bad_name))
    assert (invalid.status, json.loads(invalid.body)["details"]["causes"][0]["field"]) == (
        422,
        "metadata.name",
    )


def test_malformed_bodies_unknown_kinds_and_bad_quantities_get_upstream_statuses(server: LiveServer) -> None:
    base = f"{server.url}/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    credentials = server.credentials
    with httpx.Client(headers=credentials.headers, verify=credentials.ssl_context()) as http:
        malformed = http.post(base, content=b"{not json", headers={"Content-Type": "application/json"})
        unknown = http.get(f"{server.url}/apis/apps/v1/namespaces/{NAMESPACE}/widgets")
        bad_patch = http.patch(
            f"{base}/cart",
            content=b'[{"op": "replace", "path": "/spec/nope/x", "value": 1}]',
            headers={"Content-Type": "application/json-patch+json"},
        )
        quantity = http.patch(
            f"{base}/cart",
            headers={"Content-Type": "application/strategic-merge-patch+json"},
            content=json.dumps(
                {
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "server", "resources": {"limits": {"memory": "12XB"}}}
                                ]
                            }
                        }
                    }
                }
            ).encode(),
        )
        apply = http.patch(
            f"{base}/cart", content=b"{}", headers={"Content-Type": "application/apply-patch+yaml"}
        )
    assert (malformed.status_code, malformed.json()["reason"]) == (400, "BadRequest")
    assert (unknown.status_code, unknown.json()["kind"]) == (404, "Status")
    assert (bad_patch.status_code, bad_patch.json()["reason"]) == (422, "Invalid")
    assert (quantity.status_code, quantity.json()["reason"]) == (400, "BadRequest")
    assert (apply.status_code, apply.json()["message"]) == (400, "PATCH /apply requests require fieldManager")
    stored = server.cluster.store.get(DEPLOYMENTS, NAMESPACE, "cart")
    limits = stored["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"] == "128Mi"


def test_watch_streams_current_objects_then_changes(api: client.ApiClient, server: LiveServer) -> None:
    apps = client.AppsV1Api(api)
    listed = apps.list_namespaced_deployment(NAMESPACE, field_selector="metadata.name=cart")
    apps.patch_namespaced_deployment_scale("cart", NAMESPACE, {"spec": {"replicas": 2}})
    seen = [
        (event["type"], event["object"].spec.replicas)
        for event in watch.Watch().stream(
            apps.list_namespaced_deployment,
            NAMESPACE,
            field_selector="metadata.name=cart",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    assert seen[0] == ("MODIFIED", 2)
    fresh = [
        e["type"] for e in watch.Watch().stream(apps.list_namespaced_deployment, NAMESPACE, timeout_seconds=1)
    ]
    assert fresh == ["ADDED", "ADDED", "ADDED"]


def test_deleting_a_pod_removes_it_and_its_replicaset_replaces_it(
    api: client.ApiClient, server: LiveServer
) -> None:
    core = client.CoreV1Api(api)
    old = core.list_namespaced_pod(NAMESPACE, label_selector="app=redis").items[0].metadata.name
    gone = core.delete_namespaced_pod(old, NAMESPACE)
    assert gone.metadata.deletion_timestamp is not None
    assert core.list_namespaced_pod(NAMESPACE, label_selector="app=redis").items == []
    with server.cluster.lock:
        run(server.cluster, 10)
    fresh = core.list_namespaced_pod(NAMESPACE, label_selector="app=redis").items
    assert len(fresh) == 1 and fresh[0].metadata.name != old
    reasons = [
        e.reason
        for e in core.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={old}").items
    ]
    assert "Killing" in reasons


def test_lists_page_with_limit_and_continue(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    first = core.list_namespaced_pod(NAMESPACE, limit=3)
    rest = core.list_namespaced_pod(NAMESPACE, limit=3, _continue=first.metadata._continue)
    assert (len(first.items), first.metadata.remaining_item_count, len(rest.items)) == (3, 1, 1)
    assert rest.metadata._continue is None
    names = [p.metadata.name for p in first.items + rest.items]
    assert names == [p.metadata.name for p in core.list_namespaced_pod(NAMESPACE).items]


def test_status_subresource_writes_status_and_the_main_resource_ignores_it(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    before = apps.read_namespaced_deployment("cart", NAMESPACE)
    apps.patch_namespaced_deployment("cart", NAMESPACE, {"status": {"replicas": 7}})
    assert apps.read_namespaced_deployment("cart", NAMESPACE).status.replicas == before.status.replicas
    written = apps.patch_namespaced_deployment_status(
        "cart", NAMESPACE, {"status": {"replicas": 7}, "spec": {"replicas": 5}}
    )
    assert (written.status.replicas, written.spec.replicas) == (7, 1)
    assert written.metadata.generation == before.metadata.generation
