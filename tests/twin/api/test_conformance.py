"""What the official Python client's own end-to-end tests rely on, checked with that client against the
twin: initial statuses on create, what DELETE returns, the objects every namespace gets, the workload,
RBAC and APIService types, and the exact AlreadyExists Status body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, utils

from orchestrator.twin.launch import RunningTwin
from tests.twin.api.support import NAMESPACE, LiveServer, api_error, run
from tests.twin.twin_support import OB, served


def _pod(name: str, image: str = "shop/cart:1.0") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }


def _service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 80}]},
    }


def test_created_pods_and_services_answer_with_their_initial_status(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    pod = core.create_namespaced_pod(NAMESPACE, _pod("lonely"))
    assert (pod.status.phase, pod.status.qos_class) == ("Pending", "BestEffort")
    svc = core.create_namespaced_service(NAMESPACE, _service("lonely"))
    assert svc.status is not None and svc.status.load_balancer is not None
    assert svc.spec.cluster_ip


def test_deleting_a_service_returns_the_service_and_other_kinds_a_status(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_service(NAMESPACE, _service("gone"))
    deleted = core.delete_namespaced_service("gone", NAMESPACE, body={})
    assert isinstance(deleted, client.V1Service)
    assert deleted.metadata.name == "gone"
    assert api_error(lambda: core.read_namespaced_service("gone", NAMESPACE)).status == 404
    made = core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "gone"}, "data": {"a": "b"}})
    status = core.delete_namespaced_config_map("gone", NAMESPACE)  # typed ``object``: a plain dict
    assert (status["kind"], status["status"]) == ("Status", "Success")
    # The core group is omitted from the details, as the API server's omitempty encoding drops it.
    assert status["details"] == {"name": "gone", "kind": "configmaps", "uid": made.metadata.uid}


def test_every_namespace_gets_the_default_service_account_and_keeps_it(
    api: client.ApiClient, server: LiveServer
) -> None:
    core = client.CoreV1Api(api)
    for namespace in ("default", "kube-system", NAMESPACE):
        assert core.read_namespaced_service_account("default", namespace).metadata.name == "default"
    core.create_namespace({"metadata": {"name": "fresh"}})
    run(server.cluster, 5)
    first = core.read_namespaced_service_account("default", "fresh")
    core.delete_namespaced_service_account("default", "fresh")
    run(server.cluster, 5)
    again = core.read_namespaced_service_account("default", "fresh")
    assert again.metadata.uid != first.metadata.uid
    names = [sa.metadata.name for sa in core.list_service_account_for_all_namespaces().items]
    assert names.count("default") == len(core.list_namespace().items)


def test_the_root_ca_is_published_in_every_namespace(api: client.ApiClient, server: LiveServer) -> None:
    core = client.CoreV1Api(api)
    assert api_error(lambda: core.read_namespaced_config_map("kube-root-ca.crt", NAMESPACE)).status == 404
    pem = server.credentials.ca_pem.decode()
    server.cluster.publish_root_ca(pem)
    for namespace in ("default", NAMESPACE):
        assert core.read_namespaced_config_map("kube-root-ca.crt", namespace).data == {"ca.crt": pem}
    core.create_namespace({"metadata": {"name": "later"}})
    run(server.cluster, 5)
    assert core.read_namespaced_config_map("kube-root-ca.crt", "later").data == {"ca.crt": pem}


def test_a_served_twin_publishes_the_ca_its_kubeconfig_trusts(tmp_path: Path) -> None:
    twin: RunningTwin = served(tmp_path)
    try:
        api = config.new_client_from_config(config_file=str(twin.kubeconfig))
        found = client.CoreV1Api(api).read_namespaced_config_map("kube-root-ca.crt", OB)
        assert found.data == {"ca.crt": twin.credentials.ca_pem.decode()}
    finally:
        twin.stop()


def _daemonset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": "shop/cart:1.0"}]},
            },
        },
    }


def _owned_by(core: client.CoreV1Api, uid: str) -> list[Any]:
    return [
        p
        for p in core.list_namespaced_pod(NAMESPACE).items
        if any(o.uid == uid for o in p.metadata.owner_references or [])
    ]


def test_a_daemonset_runs_one_pod_on_every_node_and_takes_them_along(
    api: client.ApiClient, server: LiveServer
) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    created = apps.create_namespaced_daemon_set(NAMESPACE, _daemonset("agent"))
    assert created.status.desired_number_scheduled == 0
    assert created.spec.update_strategy.type == "RollingUpdate"
    run(server.cluster, 30)
    pods = _owned_by(core, created.metadata.uid)
    assert sorted(p.spec.node_name for p in pods) == ["worker-a1", "worker-a2", "worker-b1"]
    status = apps.read_namespaced_daemon_set("agent", NAMESPACE).status
    assert (status.desired_number_scheduled, status.current_number_scheduled, status.number_ready) == (
        3,
        3,
        3,
    )
    assert [d.metadata.name for d in apps.list_namespaced_daemon_set(NAMESPACE).items] == ["agent"]
    assert apps.delete_namespaced_daemon_set("agent", NAMESPACE)["status"] == "Success"
    assert api_error(lambda: apps.read_namespaced_daemon_set("agent", NAMESPACE)).status == 404
    run(server.cluster, 5)  # the garbage collector deletes the orphans: Terminating, then gone
    assert all(p.metadata.deletion_timestamp for p in _owned_by(core, created.metadata.uid))
    run(server.cluster, 60)
    assert _owned_by(core, created.metadata.uid) == []
    bad = _daemonset("bad")
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert api_error(lambda: apps.create_namespaced_daemon_set(NAMESPACE, bad)).status == 422


def test_a_replication_controller_keeps_its_replicas(api: client.ApiClient, server: LiveServer) -> None:
    core = client.CoreV1Api(api)
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "main", "image": "shop/cart:1.0"}]},
            },
        },
    }
    made = core.create_namespaced_replication_controller(NAMESPACE, rc)
    assert (made.spec.replicas, made.spec.selector, made.metadata.labels, made.status.replicas) == (
        2,
        {"app": "legacy"},
        {"app": "legacy"},
        0,
    )
    run(server.cluster, 30)
    pods = _owned_by(core, made.metadata.uid)
    assert len(pods) == 2
    core.delete_namespaced_pod(pods[0].metadata.name, NAMESPACE)
    run(server.cluster, 30)
    assert len(_owned_by(core, made.metadata.uid)) == 2
    status = core.read_namespaced_replication_controller("legacy", NAMESPACE).status
    assert (status.replicas, status.ready_replicas) == (2, 2)
    core.patch_namespaced_replication_controller_scale("legacy", NAMESPACE, {"spec": {"replicas": 1}})
    run(server.cluster, 10)
    scale = core.read_namespaced_replication_controller_scale("legacy", NAMESPACE)
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (1, 1, "app=legacy")
    core.delete_namespaced_replication_controller("legacy", NAMESPACE, propagation_policy="Background")
    run(server.cluster, 60)
    assert core.list_namespaced_replication_controller(NAMESPACE).items == []
    assert _owned_by(core, made.metadata.uid) == []


def test_rbac_objects_and_api_services_are_stored_and_served(api: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(api)
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    rbac.create_namespaced_role(NAMESPACE, {"metadata": {"name": "pod-reader"}, "rules": [rule]})
    subject = {"kind": "ServiceAccount", "name": "default", "namespace": NAMESPACE}
    rbac.create_namespaced_role_binding(
        NAMESPACE,
        {
            "metadata": {"name": "read-pods"},
            "subjects": [subject],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        },
    )
    rbac.create_cluster_role({"metadata": {"name": "system:pod-reader"}, "rules": [rule]})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "read-pods-everywhere"},
            "subjects": [subject],
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:pod-reader",
            },
        }
    )
    assert rbac.read_namespaced_role("pod-reader", NAMESPACE).rules[0].resources == ["pods"]
    assert rbac.read_namespaced_role_binding("read-pods", NAMESPACE).role_ref.name == "pod-reader"
    assert rbac.read_cluster_role("system:pod-reader").rules[0].verbs == ["get", "list", "watch"]
    assert rbac.read_cluster_role_binding("read-pods-everywhere").subjects[0].name == "default"
    assert rbac.delete_namespaced_role("pod-reader", NAMESPACE)["status"] == "Success"
    assert api_error(lambda: rbac.read_namespaced_role("pod-reader", NAMESPACE)).status == 404

    registration = client.ApiregistrationV1Api(api)
    registration.create_api_service(
        {
            "metadata": {"name": "v1alpha1.wardle.example.com"},
            "spec": {
                "group": "wardle.example.com",
                "version": "v1alpha1",
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
                "service": {"name": "api", "namespace": "wardle"},
            },
        }
    )
    found = registration.read_api_service("v1alpha1.wardle.example.com")
    assert (found.spec.group, found.spec.version) == ("wardle.example.com", "v1alpha1")
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"rbac.authorization.k8s.io", "apiregistration.k8s.io"} <= groups


def test_already_exists_is_the_api_servers_status_byte_for_byte(
    api: client.ApiClient, tmp_path: Path
) -> None:
    manifest = tmp_path / "twice.yaml"
    manifest.write_text(yaml.safe_dump_all([_service("twice"), _service("twice")]))
    with pytest.raises(utils.FailToCreateError) as caught:
        utils.create_from_yaml(api, str(manifest), namespace=NAMESPACE)
    assert str(caught.value) == (
        'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},'
        '"status":"Failure","message":"services \\"twice\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"twice","kind":"services"},"code":409}\n'
    )
    apps = client.AppsV1Api(api)
    current = api.sanitize_for_serialization(apps.read_namespaced_deployment("cart", NAMESPACE))
    duplicate = api_error(lambda: apps.create_namespaced_deployment(NAMESPACE, current))
    assert json.loads(duplicate.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "cart" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "cart", "group": "apps", "kind": "deployments"},
        "code": 409,
    }
    assert list(json.loads(duplicate.body)) == [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ]
