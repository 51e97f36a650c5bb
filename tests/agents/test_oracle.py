"""The oracle agent: alerts grouped as docs/metrics.md attributes them, full diagnoses, minimal remedies."""

from __future__ import annotations

from typing import Any

from orchestrator.agents.inputs import AlertView
from orchestrator.agents.oracle import (
    Truth,
    build_of,
    made_since,
    plan_oracle,
    record_remedy,
    remedy_call,
    revision_before,
    uncordon_zone,
)
from orchestrator.catalog.loading import load_catalog

NS = "online-boutique"


def alert(alert_id: str, rule: str, start: float, **labels: str) -> AlertView:
    return AlertView(alert_id=alert_id, rule=rule, labels={"namespace": NS, **labels}, starts_at=start)


def fault(fault_id: str, *, target: str, scope: list[str], inject_s: float, remedy: dict[str, Any],
          artifact: str, **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "fault_id": fault_id, "catalog_id": f"ob-{fault_id}", "target": target, "culprits": [target],
        "artifact": artifact, "scope": scope, "inject_s": inject_s, "remedy": remedy, **extra,
    }  # fmt: skip


CART = fault("f1", target="cartservice", scope=["cartservice", "checkoutservice", "frontend"], inject_s=100.0,
             artifact="config:cartservice/env/REDIS_ADDR",
             remedy={"action": "update_config", "service": "cartservice", "field": "env/REDIS_ADDR",
                     "value": "redis-cart:6379"})  # fmt: skip
CURRENCY = fault("f2", target="currencyservice", scope=["currencyservice", "frontend"], inject_s=200.0,
                 artifact="release:currencyservice@v9", remedy={"action": "rollback"})  # fmt: skip


def truth(*faults: dict[str, Any], now_s: float = 300.0, grace_s: float = 60.0) -> Truth:
    return Truth.model_validate({"now_s": now_s, "grace_s": grace_s, "namespace": NS, "faults": list(faults)})


def test_each_fault_gets_one_incident_of_exactly_its_attributable_alerts() -> None:
    alerts = [
        alert("a0", "ServiceHighErrorRatio", 50.0, service="cartservice"),  # before the injection
        alert("a1", "ServiceHighErrorRatio", 130.0, service="cartservice"),
        alert("a2", "OnlineBoutiqueCartErrors", 140.0, service="frontend"),  # in both scopes, both windows
        alert("a3", "ServiceLatencyP99High", 230.0, service="currencyservice"),
        alert("a4", "ServiceHighErrorRatio", 240.0, service="adservice"),  # in no scope
        alert("a5", "ServiceHighErrorRatio", 250.0, service="frontend", namespace="elsewhere"),
    ]
    plan = plan_oracle(alerts, truth(CART, CURRENCY), {}, namespace=NS)
    reports = {r.incident_id: r for r in plan.reports}
    assert reports["oracle-f1"].alert_ids == ("a1", "a2")
    assert reports["oracle-f2"].alert_ids == ("a3",), "a2 started before f2 was injected"
    assert reports["oracle-f1"].culprits == ("cartservice",)
    assert reports["oracle-f1"].artifact == "config:cartservice/env/REDIS_ADDR"
    assert {(c.fault_id, c.tool) for c in plan.calls} == {("f1", "update_config"), ("f2", "rollback_service")}
    update = next(c for c in plan.calls if c.tool == "update_config")
    assert update.args == {"incident_id": "oracle-f1", "service": "cartservice",
                           "env": {"REDIS_ADDR": "redis-cart:6379"}}  # fmt: skip


def test_a_fault_without_an_attributable_alert_is_neither_reported_nor_repaired_yet() -> None:
    plan = plan_oracle([alert("a1", "ServiceHighErrorRatio", 20.0, service="cartservice")], truth(CART), {},
                       namespace=NS)  # fmt: skip
    assert plan.reports == () and plan.calls == ()


def test_no_remedy_at_the_boundary_of_the_injection_even_with_an_attributable_alert() -> None:
    # An alert starting at the injection boundary comes from before the fault could act.
    alerts = [alert("a1", "ServiceHighErrorRatio", 100.0, service="cartservice")]
    at_injection = plan_oracle(alerts, truth(CART, now_s=100.0), {}, namespace=NS)
    assert [r.alert_ids for r in at_injection.reports] == [("a1",)]
    assert at_injection.calls == ()
    next_boundary = plan_oracle(alerts, truth(CART, now_s=220.0), at_injection.state, namespace=NS)
    assert [c.tool for c in next_boundary.calls] == ["update_config"]


def test_a_killed_pod_is_restarted_at_first_sight_and_reported_once_an_alert_arrives() -> None:
    killed = fault("f3", target="cartservice", scope=["cartservice", "frontend"], inject_s=300.0,
                   artifact="pod:cartservice", remedy={"action": "wait"}, one_shot=True)  # fmt: skip
    first = plan_oracle([], truth(killed, now_s=300.0), {}, namespace=NS)
    assert first.reports == ()
    assert [(c.tool, c.args["service"]) for c in first.calls] == [("restart_service", "cartservice")]
    state, follow_up = record_remedy(first.state, "f3", ok=True)
    assert follow_up is None  # nothing to file it under yet
    alerts = [alert("a1", "KubePodReplaced", 330.0, service="cartservice")]
    later = plan_oracle(alerts, truth(killed, now_s=420.0), state, namespace=NS)
    assert [(r.incident_id, r.alert_ids, r.status) for r in later.reports] == [
        ("oracle-f3", ("a1",), "mitigated")
    ]
    assert later.calls == ()


def test_lasting_chaos_with_no_remedy_is_left_to_its_revert_and_reported_only_with_an_alert() -> None:
    stressed = fault("f4", target="cartservice", scope=["cartservice", "frontend"], inject_s=300.0,
                     artifact="memory:cartservice", remedy={"action": "wait"})  # fmt: skip
    first = plan_oracle([], truth(stressed, now_s=300.0), {}, namespace=NS)
    assert first.reports == () and first.calls == ()
    alerts = [alert("a1", "KubeContainerOOMKilled", 330.0, service="cartservice")]
    later = plan_oracle(alerts, truth(stressed, now_s=420.0), first.state, namespace=NS)
    assert [r.status for r in later.reports] == ["open"] and later.calls == ()


def test_a_remedy_is_applied_once_and_the_incident_is_then_mitigated() -> None:
    alerts = [alert("a1", "ServiceHighErrorRatio", 130.0, service="cartservice")]
    first = plan_oracle(alerts, truth(CART), {}, namespace=NS)
    state, follow_up = record_remedy(first.state, "f1", ok=True)
    assert follow_up is not None and follow_up.status == "mitigated"
    second = plan_oracle(alerts, truth(CART, now_s=420.0), state, namespace=NS)
    assert second.reports == () and second.calls == ()


def test_a_failed_remedy_is_retried_a_bounded_number_of_times() -> None:
    alerts = [alert("a1", "ServiceHighErrorRatio", 130.0, service="cartservice")]
    state: dict[str, Any] = {}
    attempts = 0
    for _ in range(6):
        plan = plan_oracle(alerts, truth(CART), state, namespace=NS)
        attempts += len(plan.calls)
        state, follow_up = record_remedy(plan.state, "f1", ok=False)
        assert follow_up is None
    assert attempts == 3


def test_a_reverted_fault_keeps_only_alerts_from_its_window_and_is_not_repaired() -> None:
    first = plan_oracle([], truth(CART, now_s=300.0), {}, namespace=NS)
    alerts = [
        alert("a1", "ServiceHighErrorRatio", 330.0, service="cartservice"),  # within last boundary + grace
        alert("a2", "ServiceHighErrorRatio", 400.0, service="cartservice"),  # after it
    ]
    later = plan_oracle(alerts, truth(now_s=420.0), first.state, namespace=NS)
    assert [(r.incident_id, r.alert_ids) for r in later.reports] == [("oracle-f1", ("a1",))]
    assert later.calls == ()


def test_every_catalog_remedy_becomes_a_valid_tool_call_or_a_deliberate_wait() -> None:
    from orchestrator.interface.tools import TOOLS

    silent = []
    for entry in load_catalog().entries:
        remedy = entry.remedy.model_dump(mode="json")
        call = remedy_call(
            {"fault_id": entry.id, "target": entry.target, "artifact": entry.artifact, "remedy": remedy}
        )
        if call is None:
            silent.append((entry.id, entry.remedy.action))
            continue
        tool, call_args = call
        if "zone" in call_args:  # a drained zone: the same call for each of its cordoned nodes
            zone = call_args.pop("zone")
            assert entry.artifact == f"node:zone/{zone}"
            call_args["node"] = "marathon-worker"
        assert TOOLS[tool].effect == "mutate"
        TOOLS[tool].args.model_validate(call_args)  # raises when the oracle would send arguments it rejects
    # Only a remedy that is no action at all (chaos that only its own end cures) has no tool.
    assert {action for _, action in silent} <= {"wait", "none"}, silent


def test_every_remedy_action_maps_to_a_tool() -> None:
    from orchestrator.catalog.faults import Remedy
    from orchestrator.interface.tools import TOOLS

    actions = Remedy.model_fields["action"].annotation.__args__  # type: ignore[union-attr]
    base = {"fault_id": "f", "target": "cartservice"}
    values: dict[str, Any] = {"scale": 1, "update_service": 7070, "uncordon_node": "node-1"}
    fields = {"update_config": "env/REDIS_ADDR", "update_service": "targetPort", "set_feature_flag": "x"}
    for action in actions:
        remedy = {"action": action, "field": fields.get(action), "value": values.get(action, "on")}
        call = remedy_call({**base, "remedy": remedy})
        if action in ("wait", "none"):
            assert call is None
            continue
        assert call is not None, action
        assert call[0] in TOOLS, action


def test_a_service_port_and_a_drained_node_have_their_tools() -> None:
    base = {"fault_id": "f", "target": "shippingservice"}
    port = {"action": "update_service", "service": "shippingservice", "field": "targetPort", "value": 50051}
    assert remedy_call({**base, "remedy": port}) == (
        "update_service",
        {"incident_id": "oracle-f", "service": "shippingservice", "target_port": 50051},
    )
    node = {"action": "uncordon_node", "value": "marathon-worker3"}
    assert remedy_call({**base, "remedy": node}) == (
        "uncordon_node",
        {"incident_id": "oracle-f", "node": "marathon-worker3", "services": ["shippingservice"]},
    )


def test_a_reverted_faults_window_closes_at_its_planned_revert_plus_grace() -> None:
    # Listed at 300 with its revert planned at 400: the scorer's window is [100, 400 + 60].
    first = plan_oracle([], truth({**CART, "planned_revert_s": 400.0}, now_s=300.0), {}, namespace=NS)
    alerts = [
        alert("a1", "ServiceHighErrorRatio", 450.0, service="cartservice"),  # inside revert + grace
        alert("a2", "ServiceHighErrorRatio", 470.0, service="cartservice"),  # after it
    ]
    later = plan_oracle(alerts, truth(now_s=540.0), first.state, namespace=NS)
    assert later.state["faults"]["f1"]["window_end_s"] == 460.0
    assert [(r.incident_id, r.alert_ids) for r in later.reports] == [("oracle-f1", ("a1",))]


def test_remedies_map_to_their_tools() -> None:
    base = {"fault_id": "f", "target": "ad"}
    flag = remedy_call(
        {**base, "remedy": {"action": "set_feature_flag", "field": "adFailure", "value": "off"}}
    )
    assert flag == ("set_feature_flag", {"incident_id": "oracle-f", "flag": "adFailure", "variant": "off"})
    scale = remedy_call({**base, "remedy": {"action": "scale", "service": "cart", "value": 1}})
    assert scale == ("scale_service", {"incident_id": "oracle-f", "service": "cart", "replicas": 1})
    cleared = remedy_call({**base, "remedy": {"action": "update_config", "field": "resources/limits/cpu"}})
    assert cleared == ("rollback_service", {"incident_id": "oracle-f", "service": "ad"})
    # A killed pod heals by itself; the oracle still restarts its workload once (the intervention Rep needs).
    assert remedy_call({**base, "one_shot": True, "remedy": {"action": "wait"}}) == (
        "restart_service",
        {"incident_id": "oracle-f", "service": "ad"},
    )
    assert remedy_call({**base, "remedy": {"action": "wait"}}) is None  # chaos that only its end cures


def test_without_a_boundary_time_the_newest_alert_bounds_a_reverted_faults_window() -> None:
    listed = Truth.model_validate({"faults": [CART]})
    seen = [alert("a1", "ServiceHighErrorRatio", 130.0, service="cartservice")]
    first = plan_oracle(seen, listed, {}, namespace=NS)
    assert first.state["faults"]["f1"]["last_seen_s"] == 130.0
    later = [*seen, alert("a2", "ServiceHighErrorRatio", 135.0, service="frontend"),
             alert("a3", "ServiceHighErrorRatio", 200.0, service="frontend")]  # fmt: skip
    plan = plan_oracle(later, Truth(), first.state, namespace=NS)
    assert plan.reports == ()
    assert plan.state["faults"]["f1"]["alert_ids"] == ["a1"], "nothing proves f1 was live after 130 s"


def _history(current: int, *revisions: tuple[int, float]) -> dict[str, Any]:
    return {
        "current_revision": str(current),
        "revisions": [{"revision": str(number), "age_s": age} for number, age in revisions],
    }


def test_a_rollback_skips_a_restart_made_after_the_injection() -> None:
    # At 600: revision 2 served from 200, revision 3 carries the fault (500), revision 4 restarted it (600).
    history = _history(4, (1, 900.0), (2, 400.0), (3, 100.0), (4, 0.0))
    assert revision_before(history, inject_s=500.0, now_s=600.0) == 2


def test_a_rollback_without_an_intervening_revision_keeps_the_default_target() -> None:
    assert revision_before(_history(3, (1, 900.0), (3, 100.0)), inject_s=500.0, now_s=600.0) == 1
    assert revision_before(_history(2, (1, 900.0), (2, 400.0)), inject_s=500.0, now_s=600.0) is None


def test_a_rollback_skips_an_old_revision_that_runs_the_faults_build() -> None:
    # A failover back to zone-b at 560 reused zone-b's ReplicaSet of the same build, created at 100 and
    # renumbered 5: created before the injection at 500, yet it carries the fault.
    history = _history(5, (2, 580.0), (4, 100.0), (5, 500.0))
    history["revisions"][1]["images"] = ["ghcr.io/x/currency:v9"]
    history["revisions"][2]["images"] = ["ghcr.io/x/currency:v9"]
    history["revisions"][0]["images"] = ["ghcr.io/x/currency:v8"]
    assert revision_before(history, inject_s=500.0, now_s=600.0) is None  # the default: 4, the faulty build
    assert revision_before(history, inject_s=500.0, now_s=600.0, build="v9") == 2
    assert build_of(CURRENCY) == "v9" and build_of(CART) is None


def test_a_rollback_skips_the_replicaset_an_earlier_injection_of_the_entry_made() -> None:
    # The same setting injected again at 500 reused "quote-bad", made by its first injection at 100 and
    # renumbered 5; a failover at 560 made revision 6 on top, so revision 5 is no longer the current one.
    history = _history(6, (4, 550.0), (5, 500.0), (6, 40.0))
    for item, name in zip(history["revisions"], ("quote-good", "quote-bad", "quote-moved"), strict=True):
        item["name"] = name
    assert revision_before(history, inject_s=500.0, now_s=600.0) == 5  # the faulty one
    assert revision_before(history, inject_s=500.0, now_s=600.0, carriers=frozenset({"quote-bad"})) == 4
    assert made_since(history, inject_s=500.0, now_s=600.0) == ["quote-moved"]


ZONE_OUTAGE = fault("f3", target="frontend-proxy", scope=["frontend-proxy", "frontend"], inject_s=600.0,
                    artifact="node:zone/zone-b", remedy={"action": "uncordon_node"})  # fmt: skip


def test_a_drained_zone_is_given_back_after_its_failover_not_at_first_sight() -> None:
    at_injection = plan_oracle([], truth(ZONE_OUTAGE, now_s=600.0), {}, namespace=NS)
    assert at_injection.calls == ()  # uncordoned now, the shop would come back in the same site
    later = plan_oracle(
        [alert("a1", "KubeDeploymentNoAvailableReplicas", 660.0, service="frontend")],
        truth(ZONE_OUTAGE, now_s=720.0),
        at_injection.state,
        namespace=NS,
    )
    assert [(c.tool, c.args) for c in later.calls] == [
        ("uncordon_node", {"incident_id": "oracle-f3", "zone": "zone-b", "services": ["frontend-proxy"]})
    ]
    drained_node = fault("f4", target="kafka", scope=["kafka"], inject_s=600.0, artifact="node:w2",
                         remedy={"action": "uncordon_node", "value": "w2"})  # fmt: skip
    assert [c.tool for c in plan_oracle([], truth(drained_node, now_s=600.0), {}, namespace=NS).calls] == [
        "uncordon_node"
    ]


class _Tools:
    """The two tools the zone's uncordon uses, over a fixed node list; records the calls."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        self.calls.append((tool, args))
        if tool == "get_resources":
            return {"ok": True, "result": {"kind": "nodes", "items": self.nodes}}
        return {"ok": True, "result": {"node": args["node"]}}


def test_a_zones_uncordon_names_each_cordoned_node_of_that_zone_only() -> None:
    tools = _Tools([
        {"name": "w1", "zone": "zone-a", "unschedulable": True},
        {"name": "w2", "zone": "zone-a"},
        {"name": "w3", "zone": "zone-b", "unschedulable": True},
        {"name": "w4", "zone": "zone-b", "unschedulable": True},
    ])  # fmt: skip
    args = {"incident_id": "oracle-f3", "zone": "zone-b", "services": ["frontend-proxy"]}
    outcome = uncordon_zone(tools, args)  # type: ignore[arg-type]
    assert outcome == {"ok": True, "result": {"zone": "zone-b", "nodes": ["w3", "w4"]}}
    assert [(tool, a.get("node")) for tool, a in tools.calls] == [
        ("get_resources", None), ("uncordon_node", "w3"), ("uncordon_node", "w4")
    ]  # fmt: skip
    assert uncordon_zone(_Tools([{"name": "w3", "zone": "zone-b"}]), args)["ok"] is False  # type: ignore[arg-type]
