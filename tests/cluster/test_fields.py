from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.cluster.fields import FLAGD_FILE, field_patch, read_field
from orchestrator.errors import InjectionError


def _deployment() -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "cartservice"},
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "registry.example/cartservice:v0.10.6",
                            "env": [{"name": "REDIS_ADDR", "value": "redis-cart:6379"}],
                            "ports": [{"name": "grpc", "containerPort": 7070}],
                            "resources": {"limits": {"memory": "128Mi"}},
                            "readinessProbe": {"grpc": {"port": 7070}},
                        }
                    ]
                }
            },
        },
    }


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("env/REDIS_ADDR", "redis-cart:6379"),
        ("env/ABSENT", None),
        ("resources/limits/memory", "128Mi"),
        ("resources/requests/cpu", None),
        ("replicas", 1),
        ("probe/readiness/port", 7070),
        ("port/grpc", 7070),
        ("image", "registry.example/cartservice:v0.10.6"),
    ],
)
def test_a_field_is_read_from_the_deployment(field: str, expected: object) -> None:
    assert read_field(_deployment(), field=field) == expected


def test_an_env_patch_names_its_container_and_variable_only() -> None:
    patch = field_patch(_deployment(), field="env/REDIS_ADDR", value="redis-cart:6380")
    assert patch.style == "strategic"
    assert patch.body == {
        "spec": {"template": {"spec": {"containers": [{"name": "server", "env": [
            {"name": "REDIS_ADDR", "value": "redis-cart:6380"}]}]}}}
    }  # fmt: skip


def test_clearing_an_env_var_deletes_that_entry_only() -> None:
    patch = field_patch(_deployment(), field="env/REDIS_ADDR", value=None)
    container = patch.body["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "REDIS_ADDR", "$patch": "delete"}]


def test_a_containers_args_are_read_as_one_string_and_set_as_a_whole_list() -> None:
    deployment = _deployment()
    assert read_field(deployment, field="args") is None
    patch = field_patch(deployment, field="args", value="--requirepass cart-7Hq2")
    container = patch.body["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "server", "args": ["--requirepass", "cart-7Hq2"]}
    deployment["spec"]["template"]["spec"]["containers"][0]["args"] = ["--requirepass", "cart-7Hq2"]
    assert read_field(deployment, field="args") == "--requirepass cart-7Hq2"
    cleared = field_patch(deployment, field="args", value=None)
    assert cleared.body["spec"]["template"]["spec"]["containers"][0] == {"name": "server", "args": None}


def test_renumbering_a_container_port_is_a_guarded_json_patch() -> None:
    patch = field_patch(_deployment(), field="port/grpc", value=7071)
    assert patch.style == "json"
    path = "/spec/template/spec/containers/0/ports/0/containerPort"
    assert patch.body[0] == {"op": "test", "path": path, "value": 7070}
    assert patch.body[1]["value"] == 7071


def test_a_probe_port_patch_keeps_the_probe_handler() -> None:
    patch = field_patch(_deployment(), field="probe/readiness/port", value=7777)
    container = patch.body["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == {"grpc": {"port": 7777}}


def test_a_service_target_port_patch_merges_on_the_service_port() -> None:
    service = {"kind": "Service", "spec": {"ports": [{"port": 7070, "targetPort": 7070}]}}
    assert read_field(service, field="targetPort") == 7070
    assert field_patch(service, field="targetPort", value=7071).body == {
        "spec": {"ports": [{"port": 7070, "targetPort": 7071}]}
    }


def test_a_feature_flag_is_read_and_set_in_the_flagd_document() -> None:
    document = {"flags": {"paymentFailure": {"defaultVariant": "off", "state": "ENABLED"}}}
    configmap = {"kind": "ConfigMap", "data": {FLAGD_FILE: json.dumps(document)}}
    assert read_field(configmap, field="flags/paymentFailure") == "off"
    patch = field_patch(configmap, field="flags/paymentFailure", value="on")
    patched = json.loads(patch.body["data"][FLAGD_FILE])
    assert patched["flags"]["paymentFailure"] == {"defaultVariant": "on", "state": "ENABLED"}


def test_an_unknown_container_is_an_injection_error() -> None:
    with pytest.raises(InjectionError, match="no container 'sidecar'"):
        read_field(_deployment(), field="image", container="sidecar")
