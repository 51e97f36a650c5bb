from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from orchestrator.catalog.apps import REPOSITORY_ROOT, app_names
from orchestrator.catalog.manifest_commands import register
from orchestrator.catalog.manifests import app_manifest_path, flag_file, render_objects, render_yaml
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Topology, parse_address
from orchestrator.cli import main

MODEL_OF_KIND = {
    "Namespace": "V1Namespace",
    "Deployment": "V1Deployment",
    "StatefulSet": "V1StatefulSet",
    "Service": "V1Service",
    "ConfigMap": "V1ConfigMap",
}


def _deserialize(client: ApiClient, obj: dict[str, Any], klass: str) -> Any:
    # The public deserialize() takes a response object in older clients and its text in newer ones; the
    # model-building step under it is the same in both.
    return client._ApiClient__deserialize(json.loads(json.dumps(obj)), klass)


@pytest.fixture(scope="module", params=app_names())
def topology(request: pytest.FixtureRequest) -> Topology:
    return load_topology(request.param)


def test_committed_manifests_are_rendered_from_the_current_topology(topology: Topology) -> None:
    committed = app_manifest_path(topology.app, root=REPOSITORY_ROOT).read_text(encoding="utf-8")
    assert committed == render_yaml(topology), (
        f"manifests/{topology.app}/app.yaml is stale: run `marathon manifests render --app {topology.app}`"
    )


def test_rendering_is_deterministic(topology: Topology) -> None:
    again = Topology.model_validate(topology.model_dump())
    assert render_yaml(again) == render_yaml(topology)


def test_every_object_round_trips_through_the_official_client_models(topology: Topology) -> None:
    client = ApiClient()
    for obj in render_objects(topology):
        model = _deserialize(client, obj, MODEL_OF_KIND[obj["kind"]])
        # A field the client does not know is dropped on the way in, so the round trip exposes it.
        assert client.sanitize_for_serialization(model) == obj, obj["metadata"]["name"]


def test_the_file_parses_back_to_the_rendered_objects(topology: Topology) -> None:
    parsed = list(yaml.safe_load_all(render_yaml(topology)))
    assert parsed == render_objects(topology)
    assert parsed[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": topology.namespace, "labels": {"app.kubernetes.io/part-of": topology.app}},
    }


def test_every_service_gets_its_workload_selected_by_its_app_label(topology: Topology) -> None:
    workloads = {
        o["metadata"]["name"]: o
        for o in render_objects(topology)
        if o["kind"] in ("Deployment", "StatefulSet")
    }
    assert list(workloads) == list(topology.service_names)
    for name, deployment in workloads.items():
        assert deployment["kind"] == topology.service(name).workload
        assert deployment["metadata"]["namespace"] == topology.namespace
        assert deployment["spec"]["selector"]["matchLabels"] == {"app": name}
        assert deployment["spec"]["template"]["metadata"]["labels"]["app"] == name
        assert deployment["spec"]["replicas"] == topology.service(name).replicas


def test_containers_carry_image_env_resources_and_probes() -> None:
    ob = load_topology("online-boutique")
    deployments = {o["metadata"]["name"]: o for o in render_objects(ob) if o["kind"] == "Deployment"}
    cart = deployments["cartservice"]["spec"]["template"]["spec"]["containers"][0]
    assert cart["name"] == "server"
    assert cart["image"].endswith("/cartservice:v0.10.6")
    assert {"name": "REDIS_ADDR", "value": "redis-cart:6379"} in cart["env"]
    assert cart["resources"] == {
        "requests": {"cpu": "200m", "memory": "64Mi"},
        "limits": {"cpu": "300m", "memory": "128Mi"},
    }
    assert cart["readinessProbe"]["grpc"] == {"port": 7070}
    assert cart["readinessProbe"]["initialDelaySeconds"] == 15
    frontend = deployments["frontend"]["spec"]["template"]["spec"]["containers"][0]
    assert frontend["livenessProbe"]["httpGet"]["httpHeaders"] == [
        {"name": "Cookie", "value": "shop_session-id=x-liveness-probe"}
    ]


def test_credentials_reach_the_container_env() -> None:
    tt = load_topology("train-ticket")
    objects = {(o["kind"], o["metadata"]["name"]): o for o in render_objects(tt)}
    container = objects[("Deployment", "ts-order-service")]["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["ORDER_MYSQL_HOST"] == "tsdb-mysql-leader"
    assert env["ORDER_MYSQL_USER"] == "ts" and env["ORDER_MYSQL_PASSWORD"] == "Ts_123456"
    assert {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}} in container["env"]


def test_services_map_their_port_to_the_container_port() -> None:
    ob = load_topology("online-boutique")
    services = {o["metadata"]["name"]: o for o in render_objects(ob) if o["kind"] == "Service"}
    assert "loadgenerator" not in services
    assert services["emailservice"]["spec"]["ports"] == [
        {"name": "grpc", "port": 5000, "targetPort": 8080, "protocol": "TCP"}
    ]
    assert services["frontend"]["spec"]["ports"][0]["port"] == 80


def test_aliases_node_ports_and_headless_workers_are_rendered() -> None:
    tt = load_topology("train-ticket")
    services = {o["metadata"]["name"]: o for o in render_objects(tt) if o["kind"] == "Service"}
    assert services["tsdb-mysql-leader"]["spec"]["selector"] == {"app": "tsdb-mysql"}
    assert services["ts-ui-dashboard"]["spec"]["type"] == "NodePort"
    assert services["ts-ui-dashboard"]["spec"]["ports"][0]["nodePort"] == 32677
    assert "ts-wait-order-service" not in services and "ts-food-delivery-service" not in services


def test_train_ticket_has_the_workloads_of_its_pinned_quick_start() -> None:
    # At commit 313886e9: deploy.yaml.sample's 46 Deployments and the rabbitmq chart's, and the charts/mysql
    # releases tsdb and nacosdb and the charts/nacos release as StatefulSets of 3.
    objects = render_objects(load_topology("train-ticket"))
    kinds = Counter(o["kind"] for o in objects)
    assert kinds["Deployment"] == 47
    sets = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "StatefulSet"}
    assert {name: spec["replicas"] for name, spec in sets.items()} == {
        "tsdb-mysql": 3,
        "nacosdb-mysql": 3,
        "nacos": 3,
    }
    assert sets["nacos"]["serviceName"] == "nacos-headless"
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    assert services["nacos-headless"]["spec"]["clusterIP"] == "None"
    assert {"tsdb-mysql", "tsdb-mysql-leader", "tsdb-mysql-follower", "nacos", "rabbitmq"} <= set(services)


def test_every_address_env_reaches_a_rendered_service_port(topology: Topology) -> None:
    services = {o["metadata"]["name"]: o for o in render_objects(topology) if o["kind"] == "Service"}
    for service in topology.services:
        for env, target in topology.address_targets(service.name).items():
            address = parse_address(service.address_env[env])
            assert address is not None
            spec = services[address.host]["spec"]
            assert spec["selector"] == {"app": target}, (service.name, env)
            if address.port is not None:
                assert address.port in {port["port"] for port in spec["ports"]}, (service.name, env)


def test_the_flag_file_holds_every_flag_at_its_default_and_is_mounted_into_flagd() -> None:
    shop = load_topology("astronomy-shop")
    objects = {(o["kind"], o["metadata"]["name"]): o for o in render_objects(shop)}
    config = objects[("ConfigMap", "flagd-config")]
    flags = json.loads(config["data"]["demo.flagd.json"])["flags"]
    assert set(flags) == {flag.name for flag in shop.feature_flags}
    assert flags["paymentFailure"]["defaultVariant"] == "off"
    assert flags["paymentFailure"]["variants"]["off"] == 0
    assert json.loads(flag_file(shop)) == {
        "$schema": "https://flagd.dev/schema/v0/flags.json",
        "flags": flags,
    }
    pod = objects[("Deployment", "flagd")]["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "flag-config", "configMap": {"name": "flagd-config"}}]
    assert [c["name"] for c in pod["containers"]] == ["flagd", "flagd-ui"]
    flagd_service = objects[("Service", "flagd")]["spec"]["ports"]
    assert [p["port"] for p in flagd_service] == [8013, 8016, 4000]


def test_site_services_are_pinned_to_their_zone() -> None:
    shop = load_topology("astronomy-shop")
    for obj in render_objects(shop):
        if obj["kind"] == "Deployment":
            assert obj["spec"]["template"]["spec"]["nodeSelector"] == {
                "topology.kubernetes.io/zone": "zone-a"
            }
    ob = load_topology("online-boutique")
    assert all(
        "nodeSelector" not in o.get("spec", {}).get("template", {}).get("spec", {})
        for o in render_objects(ob)
    )


def _tmp_root(tmp_path: Path) -> Path:
    target = tmp_path / "manifests" / "online-boutique"
    target.mkdir(parents=True)
    shutil.copy(REPOSITORY_ROOT / "manifests" / "online-boutique" / "topology.yaml", target)
    return tmp_path


def test_render_command_writes_then_check_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tmp_root(tmp_path)
    assert main(["manifests", "render", "--check", "--root", str(root)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["manifests", "render", "--app", "online-boutique", "--root", str(root)]) == 0
    written = (root / "manifests" / "online-boutique" / "app.yaml").read_text()
    assert written == render_yaml(load_topology("online-boutique", root=root))
    assert main(["manifests", "render", "--check", "--root", str(root)]) == 0


def test_render_command_check_changes_nothing(tmp_path: Path) -> None:
    root = _tmp_root(tmp_path)
    app_file = root / "manifests" / "online-boutique" / "app.yaml"
    app_file.write_text("stale\n")
    assert main(["manifests", "render", "--check", "--root", str(root)]) == 1
    assert app_file.read_text() == "stale\n"


def test_render_command_names_an_unknown_app(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tmp_root(tmp_path)
    assert main(["manifests", "render", "--app", "sock-shop", "--root", str(root)]) == 2
    assert "sock-shop" in capsys.readouterr().err
    assert callable(register)
