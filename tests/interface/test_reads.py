"""Each read tool against a running Online Boutique twin, through the journaled caller."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from orchestrator.bundle.records import AlertRecord, ToolCall
from orchestrator.interface.calls import ToolCaller
from orchestrator.telemetry.alerts import Sample
from orchestrator.telemetry.fake import FakeQuerier
from orchestrator.telemetry.querying import RangeSeries
from tests.interface.world import World


def _ok(caller: ToolCaller, tool: str, **args: Any) -> Any:
    outcome = caller.call(tool, args)
    assert outcome["ok"], outcome
    return outcome["result"]


def test_every_read_is_journaled_as_an_allowed_read(shared_ob: World) -> None:
    before = len(shared_ob.records)
    _ok(shared_ob.caller(4), "get_topology")
    (record,) = shared_ob.records[before:]
    assert isinstance(record, ToolCall)
    assert (record.tool, record.effect, record.decision, record.invocation) == (
        "get_topology",
        "read",
        "allowed",
        4,
    )
    assert '"entry_point": "frontend"' in record.result


def test_get_topology_lists_every_service_and_the_calls_between_them(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_topology")
    names = {s["name"] for s in result["services"]}
    assert names == set(shared_ob.backend.topology.service_names)
    frontend = next(s for s in result["services"] if s["name"] == "frontend")
    assert "cartservice" in frontend["calls"]


def test_get_resources_lists_pods_with_status_and_images(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_resources", kind="pods")
    cart = next(p for p in result["items"] if p["name"].startswith("cartservice-"))
    assert cart["status"] == "Running"
    assert cart["ready"] == "1/1"
    assert cart["images"][0].endswith("cartservice:v0.10.6")


@pytest.mark.parametrize(
    "kind", ["deployments", "replicasets", "services", "endpoints", "nodes", "configmaps"]
)
def test_get_resources_answers_every_kind(shared_ob: World, kind: str) -> None:
    result = _ok(shared_ob.caller(), "get_resources", kind=kind)
    assert result["count"] == len(result["items"])
    if kind != "configmaps":  # Online Boutique ships no ConfigMaps
        assert result["count"] > 0
        assert all("name" in item for item in result["items"])


def test_get_resources_by_name_answers_one_deployment(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_resources", kind="deployments", name="cartservice")
    (item,) = result["items"]
    assert (item["name"], item["replicas"], item["revision"]) == ("cartservice", 1, "1")


def test_hidden_namespaces_are_left_out_of_the_namespace_list(shared_ob: World) -> None:
    shared_ob.kube.ensure_namespace("chaos-mesh")
    names = {n["name"] for n in _ok(shared_ob.caller(), "get_resources", kind="namespaces")["items"]}
    assert "online-boutique" in names
    assert "chaos-mesh" not in names


def test_describe_shows_the_object_without_bookkeeping_and_with_its_events(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "describe", kind="deployments", name="cartservice")
    assert result["object"]["metadata"]["name"] == "cartservice"
    assert "managedFields" not in result["object"]["metadata"]
    assert "uid" not in result["object"]["metadata"]
    assert any(e["object"] == "Deployment/cartservice" for e in result["events"])


def test_get_events_filters_by_name_prefix_and_stamps_schedule_time(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_events", name="cartservice")
    assert result["count"] > 0
    assert all(e["object"].split("/", 1)[1].startswith("cartservice") for e in result["events"])
    assert all(0 <= e["at_s"] <= shared_ob.t for e in result["events"])


def test_get_logs_of_a_service_reads_its_pods_tail(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_logs", service="cartservice", tail=3)
    assert result["lines"] == 3
    assert result["pods"][0].startswith("cartservice-")
    assert "CartService" in result["log"]


def test_get_logs_grep_keeps_only_matching_lines_of_one_pod(shared_ob: World) -> None:
    pod = _ok(shared_ob.caller(), "get_resources", kind="pods")["items"][1]["name"]
    result = _ok(shared_ob.caller(), "get_logs", pod=pod, grep="getcart|additem")
    lines = result["log"].splitlines()
    assert lines
    assert all("getcart" in line.lower() or "additem" in line.lower() for line in lines)


def test_get_logs_needs_exactly_one_of_service_or_pod(shared_ob: World) -> None:
    outcome = shared_ob.caller().call("get_logs", {})
    assert outcome["error"]["type"] == "invalid_arguments"
    assert "exactly one of service or pod" in outcome["error"]["message"]


def test_get_traces_summarises_recent_traces_through_a_service(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_traces", service="cartservice", limit=3, since_s=60)
    assert 0 < result["count"] <= 3
    for trace in result["traces"]:
        assert "cartservice" in trace["services"]
        assert shared_ob.t - 60 - 1 <= trace["start_s"] <= shared_ob.t
        assert trace["duration_ms"] > 0


def test_get_rollout_history_lists_revisions_with_images(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_rollout_history", service="frontend")
    assert result["current_revision"] == "1"
    assert [r["revision"] for r in result["revisions"]] == ["1"]
    assert result["revisions"][0]["images"][0].endswith("frontend:v0.10.6")


def test_get_config_shows_env_resources_ports_and_probes(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_config", service="cartservice")
    (container,) = result["containers"]
    assert container["env"]["REDIS_ADDR"] == "redis-cart:6379"
    assert container["resources"]["limits"]["memory"] == "128Mi"
    assert container["ports"] == {"grpc": 7070}
    assert "readiness" in container["probes"]


def test_list_and_read_source_show_the_deployed_version(shared_ob: World) -> None:
    listing = _ok(shared_ob.caller(), "list_source", service="cartservice")
    assert listing["version"] == "v0.10.6"
    path = next(f["path"] for f in listing["files"] if f["path"].endswith("/services/CartService.cs"))
    content = _ok(shared_ob.caller(), "read_source", service="cartservice", path=path)["content"]
    assert "Hipstershop.CartService.CartServiceBase" in content
    missing = shared_ob.caller().call("read_source", {"service": "cartservice", "path": "nope.cs"})
    assert missing["error"]["type"] == "SourceError"


def test_get_feature_flags_says_when_the_application_has_none(shared_ob: World) -> None:
    result = _ok(shared_ob.caller(), "get_feature_flags")
    assert result["flags"] == []
    assert "no feature flags" in result["note"]


def test_get_alerts_filters_by_status_service_rule_and_time(shared_ob: World) -> None:
    shared_ob.alerts[:] = [
        AlertRecord(
            alert_id="a1",
            rule="HighErrorRate",
            labels={"service": "cartservice", "namespace": "online-boutique"},
            starts_at=10.0,
        ),
        AlertRecord(
            alert_id="a2", rule="PodRestarts", labels={"service": "frontend"}, starts_at=5.0, ends_at=9.0
        ),
        AlertRecord(
            alert_id="a3", rule="HighErrorRate", labels={"service": "frontend"}, starts_at=20.0, ends_at=55.0
        ),
    ]
    caller = shared_ob.caller()

    def ids(**args: Any) -> list[str]:
        return [a["alert_id"] for a in _ok(caller, "get_alerts", **args)["alerts"]]

    assert ids() == ["a1", "a2", "a3"]
    assert ids(status="firing") == ["a1"]
    assert ids(status="resolved") == ["a2", "a3"]
    assert ids(service="frontend") == ["a2", "a3"]
    assert ids(rule="HighErrorRate") == ["a1", "a3"]
    assert ids(since_s=shared_ob.t - 50) == ["a1", "a3"]
    assert ids(namespace="online-boutique") == ["a1"]
    shared_ob.alerts.clear()


def test_query_metrics_converts_schedule_time_and_hides_hidden_namespaces(shared_ob: World) -> None:
    origin = shared_ob.backend.origin_epoch_s
    querier = FakeQuerier(
        instants={"up": [
            Sample(labels={"namespace": "online-boutique", "service": "cart"}, value=1.5),
            Sample(labels={"namespace": "chaos-mesh"}, value=1.0),
            Sample(labels={"namespace": "online-boutique", "service": "nan"}, value=float("nan")),
        ]},
        ranges={"up": [
            RangeSeries(labels={"namespace": "online-boutique"}, points=((origin, 1.0), (origin + 15, 2.0))),
            RangeSeries(labels={"namespace": "monitoring"}, points=((origin, 9.0),)),
        ]},
    )  # fmt: skip
    backend = dataclasses.replace(shared_ob.backend, querier=querier)
    caller = ToolCaller(backend, shared_ob.records.append)
    instant = _ok(caller, "query_metrics", query="up")
    assert querier.instant_calls[-1] == ("up", origin + shared_ob.t)
    assert [s["labels"].get("service") for s in instant["series"]] == ["cart", "nan"]
    assert instant["series"][1]["value"] is None
    ranged = _ok(caller, "query_metrics", query="up", start_s=0, end_s=30, step_s=15)
    assert querier.range_calls[-1] == ("up", origin, origin + 30, 15)
    assert ranged["series"] == [
        {"labels": {"namespace": "online-boutique"}, "points": [[0.0, 1.0], [15.0, 2.0]]}
    ]
    later = ToolCaller(dataclasses.replace(backend, now_s=lambda: 3600.0), shared_ob.records.append)
    wide = _ok(later, "query_metrics", query="up", start_s=0, end_s=7200, step_s=1)
    assert wide["end_s"] == 3600.0  # never past the present
    assert wide["step_s"] == pytest.approx(3600 / 120)
    assert "step widened" in wide["note"]


def test_query_metrics_without_a_metrics_backend_is_an_error_result(shared_ob: World) -> None:
    outcome = shared_ob.caller().call("query_metrics", {"query": "up"})
    assert outcome == {
        "ok": False,
        "error": {"type": "TelemetryError", "message": "no metrics backend is configured for this run"},
    }
