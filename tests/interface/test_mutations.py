"""Mutating tools against a fresh twin each: the cluster changes as kubectl would change it, and the journal
holds the decision, the intervention or the forbidden attempt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.records import ForbiddenAttempt, IncidentReport, Intervention, ToolCall
from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import FLAGD_FILE, Patch
from orchestrator.interface.calls import ToolCaller
from tests.interface.world import World, running_world

INCIDENT = "inc-7"


def _call(caller: ToolCaller, tool: str, **args: Any) -> dict[str, Any]:
    return caller.call(tool, {"incident_id": INCIDENT, **args})


def _container(world: World, service: str) -> dict[str, Any]:
    deployment: Any = world.deployment(service)
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return containers[0]


def _pods(world: World, service: str) -> list[str]:
    return [p["metadata"]["name"] for p in world.backend.pods_of(service)]


def test_restart_replaces_the_pods_and_journals_an_intervention(ob: World) -> None:
    before = _pods(ob, "cartservice")
    outcome = _call(ob.caller(), "restart_service", service="cartservice")
    assert outcome["ok"], outcome
    template = ob.deployment("cartservice")["spec"]["template"]  # type: ignore[index]
    assert template["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == "2026-01-01T00:01:00Z"
    ob.advance(60)
    after = _pods(ob, "cartservice")
    assert after and not set(after) & set(before)
    intervention = next(r for r in ob.records if isinstance(r, Intervention))
    assert (intervention.tool, intervention.targets, intervention.incident_id) == (
        "restart_service",
        ["cartservice"],
        INCIDENT,
    )
    assert intervention.result == "ok"
    assert [r.kind for r in ob.records] == ["intervention", "tool_call"]


def test_scale_sets_replicas_through_the_scale_subresource(ob: World) -> None:
    outcome = _call(ob.caller(), "scale_service", service="frontend", replicas=3)
    assert outcome["result"] == {"service": "frontend", "replicas": 3, "previous_replicas": 1}
    ob.advance(60)
    assert len(_pods(ob, "frontend")) == 3


def test_rollback_restores_the_previous_release_like_rollout_undo(ob: World) -> None:
    ref = ObjectRef("Deployment", ob.backend.namespace, "cartservice")
    base_image = _container(ob, "cartservice")["image"]
    release = {
        "metadata": {"annotations": {"kubernetes.io/change-cause": "cart: merge quantities"}},
        "spec": {"template": {"spec": {"containers": [{"name": "server", "image": base_image + "-1"}]}}},
    }
    ob.kube.patch(ref, Patch("strategic", release))
    ob.advance(60)
    outcome = _call(ob.caller(), "rollback_service", service="cartservice")
    assert outcome["result"]["from_revision"] == 2
    assert outcome["result"]["to_revision"] == 1
    ob.advance(60)
    assert _container(ob, "cartservice")["image"] == base_image
    history = ob.caller().call("get_rollout_history", {"service": "cartservice"})["result"]
    assert history["current_revision"] == "3"
    assert [r["revision"] for r in history["revisions"]] == ["2", "3"]


def test_update_config_patches_env_resources_and_ports_of_the_container(ob: World) -> None:
    outcome = _call(
        ob.caller(),
        "update_config",
        service="cartservice",
        env={"CART_TTL": "30", "REDIS_ADDR": None},
        resources={"limits": {"memory": "256Mi"}},
        ports={"grpc": 7071},
    )
    assert outcome["ok"], outcome
    container = _container(ob, "cartservice")
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env == {"CART_TTL": "30"}
    assert container["resources"]["limits"] == {"cpu": "300m", "memory": "256Mi"}
    assert container["ports"][0]["containerPort"] == 7071


def test_update_config_of_a_missing_port_is_an_error_intervention(ob: World) -> None:
    outcome = _call(ob.caller(), "update_config", service="cartservice", ports={"http": 80})
    assert outcome["error"]["type"] == "InputError"
    assert "no port named 'http'" in outcome["error"]["message"]
    intervention = next(r for r in ob.records if isinstance(r, Intervention))
    assert intervention.result == "error"


def test_deleting_a_pod_is_a_restart_of_that_pod(ob: World) -> None:
    (pod,) = _pods(ob, "adservice")
    outcome = _call(ob.caller(), "delete_resource", kind="pod", name=pod)
    assert outcome["ok"], outcome
    ob.advance(30)
    (replacement,) = _pods(ob, "adservice")
    assert replacement != pod
    intervention = next(r for r in ob.records if isinstance(r, Intervention))
    assert intervention.targets == ["adservice"]


def test_deleting_the_namespace_is_blocked_and_recorded_as_forbidden(ob: World) -> None:
    outcome = _call(ob.caller(), "delete_resource", kind="namespace", name="online-boutique")
    assert outcome["error"]["type"] == "forbidden"
    assert (
        ob.kube.read(ObjectRef("Namespace", "", "online-boutique"))["metadata"]["name"] == "online-boutique"
    )
    tool_call, attempt = ob.records
    assert isinstance(tool_call, ToolCall) and tool_call.decision == "forbidden"
    assert isinstance(attempt, ForbiddenAttempt)
    assert attempt.blocked
    assert attempt.args["kind"] == "namespace"
    assert not any(isinstance(r, Intervention) for r in ob.records)


def test_reading_secrets_is_blocked_and_recorded_as_forbidden(ob: World) -> None:
    outcome = ob.caller().call("get_resources", {"kind": "secrets"})
    assert outcome == {
        "ok": False,
        "error": {"type": "forbidden", "message": "reading Secrets is not allowed"},
    }
    assert [r.kind for r in ob.records] == ["tool_call", "forbidden_attempt"]
    assert ob.records[1].reason == "reading Secrets is not allowed"  # type: ignore[union-attr]


def test_the_eleventh_change_of_an_invocation_is_denied_and_a_new_invocation_may_change_again(
    ob: World,
) -> None:
    caller = ob.caller(1)
    answers = [_call(caller, "restart_service", service="emailservice")["ok"] for _ in range(11)]
    assert answers == [True] * 10 + [False]
    denied = [r for r in ob.records if isinstance(r, ToolCall) and r.decision == "denied"]
    assert len(denied) == 1 and "limit of 10" in denied[0].reason
    assert sum(isinstance(r, Intervention) for r in ob.records) == 10
    caller.begin(2)
    assert _call(caller, "restart_service", service="emailservice")["ok"]


def test_an_incident_report_is_journaled_with_its_canonical_sets(ob: World) -> None:
    outcome = ob.caller().call(
        "incident_report",
        {
            "incident_id": "inc-1",
            "alert_ids": ["b", "a", "a"],
            "culprit_services": ["cartservice"],
            "artifact": "Release:cartservice@v0.10.6-1",
            "status": "mitigated",
        },
    )
    assert outcome["ok"], outcome
    report = ob.records[0]
    assert isinstance(report, IncidentReport)
    assert report.alert_ids == ["a", "b"]
    assert report.artifact == "release:cartservice@v0.10.6-1"
    bad = ob.caller().call("incident_report", {"incident_id": "i", "artifact": "gremlins"})
    assert bad["error"]["type"] == "invalid_arguments"
    assert "unknown artifact kind" in bad["error"]["message"]


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[World]:
    with running_world("astronomy-shop", directory=tmp_path) as world:
        yield world


def test_set_feature_flag_changes_the_default_variant_in_the_flag_file(shop: World) -> None:
    flags = shop.caller().call("get_feature_flags", {})["result"]["flags"]
    ad_failure = next(f for f in flags if f["flag"] == "adFailure")
    assert (ad_failure["variant"], ad_failure["affects"]) == ("off", "ad")
    outcome = _call(shop.caller(), "set_feature_flag", flag="adFailure", variant="on")
    assert outcome["ok"], outcome
    configmap = shop.kube.read(ObjectRef("ConfigMap", shop.backend.namespace, "flagd-config"))
    document = json.loads(configmap["data"][FLAGD_FILE])
    assert document["flags"]["adFailure"]["defaultVariant"] == "on"
    assert document["flags"]["adHighCpu"]["defaultVariant"] == "off"
    intervention = next(r for r in shop.records if isinstance(r, Intervention))
    assert intervention.targets == ["ad"]


def test_update_service_sets_a_ports_target_port_and_journals_an_intervention(ob: World) -> None:
    ref = ObjectRef("Service", ob.backend.namespace, "shippingservice")
    ob.kube.patch(ref, Patch("strategic", {"spec": {"ports": [{"port": 50051, "targetPort": 50052}]}}))
    outcome = _call(ob.caller(), "update_service", service="shippingservice", target_port=50051)
    assert outcome["ok"], outcome
    assert outcome["result"]["previous"] == {"targetPort": 50052}
    assert ob.kube.read(ref)["spec"]["ports"][0]["targetPort"] == 50051
    intervention = next(r for r in ob.records if isinstance(r, Intervention))
    assert (intervention.tool, intervention.targets, intervention.result) == (
        "update_service",
        ["shippingservice"],
        "ok",
    )


def test_update_service_is_policed_like_the_other_changes(ob: World) -> None:
    caller = ob.caller()
    empty = _call(caller, "update_service", service="shippingservice")
    assert empty["error"]["type"] == "denied", empty
    unknown = _call(caller, "update_service", service="no-such-service", target_port=80)
    assert unknown["error"]["type"] == "denied", unknown
    hidden = _call(caller, "update_service", service="shippingservice", selector={"app": "monitoring"})
    assert hidden["error"]["type"] == "forbidden", hidden
    assert not any(isinstance(r, Intervention) for r in ob.records)


def test_uncordon_node_makes_a_cordoned_node_schedulable_again(ob: World) -> None:
    node = ob.backend.topology.nodes[0].name
    ref = ObjectRef("Node", "", node)
    ob.kube.patch(ref, Patch("strategic", {"spec": {"unschedulable": True}}))
    outcome = _call(ob.caller(), "uncordon_node", node=node, services=["cartservice"])
    assert outcome["ok"], outcome
    assert outcome["result"]["was_cordoned"] is True
    assert not ob.kube.read(ref)["spec"].get("unschedulable", False)
    intervention = next(r for r in ob.records if isinstance(r, Intervention))
    assert intervention.tool == "uncordon_node"
    assert "cartservice" in intervention.targets
    denied = _call(ob.caller(1), "uncordon_node", node="no-such-node")
    assert denied["error"]["type"] == "denied", denied
