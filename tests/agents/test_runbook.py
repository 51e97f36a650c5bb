"""The runbook agent: its rule table covers the rule pack, and its decisions are a pure function of alerts."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.agents.inputs import AlertView, parse_alerts, workload_of
from orchestrator.agents.runbook import plan_runbook, record_outcome, replicas_in
from orchestrator.agents.runbook_rules import RULE_TABLE, rule_for, signal_of, strongest
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.vocabulary.artifacts import ARTIFACT_KINDS

NS = "online-boutique"


def _signals() -> dict[str, str]:
    """Each alert rule of the pack and its ``signal`` label."""
    return {rule.name: dict(rule.labels).get("signal", "") for rule in load_rule_pack().rules}


SIGNALS = _signals()


def alert(
    alert_id: str, rule: str, *, start: float = 10.0, end: float | None = None, **labels: str
) -> AlertView:
    """An alert of the pack's rule ``rule``, carrying the labels that rule gives its alerts."""
    labels = {"namespace": NS, "signal": SIGNALS[rule], **labels}
    return AlertView(alert_id=alert_id, rule=rule, labels=labels, starts_at=start, ends_at=end)


def test_the_rule_table_covers_the_signal_of_every_alert_rule_of_the_rule_pack() -> None:
    assert len(SIGNALS) >= 25
    assert sorted(name for name, signal in SIGNALS.items() if signal not in RULE_TABLE) == []


def test_every_signal_blames_a_kind_of_the_closed_vocabulary() -> None:
    assert {rule.kind for rule in RULE_TABLE.values()} <= set(ARTIFACT_KINDS)


def test_the_table_follows_the_runbook_policy() -> None:
    assert rule_for(SIGNALS["ServiceHighErrorRatio"]).action == "rollback"
    assert rule_for(SIGNALS["ServiceLatencyP99Critical"]).action == "rollback"
    assert rule_for(SIGNALS["OnlineBoutiqueCheckoutErrors"]).action == "rollback"
    assert rule_for("rollout").action == "rollback"
    assert rule_for(SIGNALS["KubeDeploymentNoAvailableReplicas"]).action == "scale"
    assert rule_for("cpu-saturation").action == "scale"
    assert rule_for("backlog").action == "scale"
    assert rule_for(SIGNALS["KubePodCrashLooping"]).action == "restart"
    assert rule_for("a-signal-nobody-wrote").action == "restart"
    assert rule_for(signal_of({"alertname": "NoSignalLabel"})).action == "restart"


def test_a_signal_naming_the_broken_object_wins_over_a_symptom() -> None:
    oom, errors, latency = (SIGNALS[n] for n in ("KubeContainerOOMKilled", "ServiceHighErrorRatio",
                                                  "ServiceLatencyP99High"))  # fmt: skip
    assert strongest([errors, oom]) == oom
    assert strongest([latency, errors]) == errors
    assert strongest([SIGNALS["RedisDown"], SIGNALS["KubeContainerOOMKilled"]]) == oom


def test_alerts_are_grouped_into_one_incident_per_workload_with_one_action_each() -> None:
    alerts = [
        alert("a1", "ServiceHighErrorRatio", service="cartservice"),
        alert("a2", "KubePodCrashLooping", pod="cartservice-5d8f7c9b6d-x2x9q"),
        alert("a3", "KubeDeploymentNoAvailableReplicas", deployment="checkoutservice", start=20.0),
        AlertView(alert_id="a4", rule="KubeNodeNotReady", labels={"namespace": NS, "signal": "node",
                  "node": "marathon-worker2"}, starts_at=10.0, ends_at=None),  # fmt: skip
        alert("a5", "ServiceHighErrorRatio", service="frontend", namespace="other"),
    ]
    plan = plan_runbook(alerts, {}, namespace=NS)
    reports = {r.incident_id: r for r in plan.reports}
    assert set(reports) == {"rb-cartservice-1", "rb-checkoutservice-1"}
    cart = reports["rb-cartservice-1"]
    assert (cart.alert_ids, cart.culprits, cart.artifact) == (("a1", "a2"), ("cartservice",), "pod")
    assert cart.status == "open"
    assert reports["rb-checkoutservice-1"].artifact == "replicas"
    assert [(s.incident_id, s.action, s.service) for s in plan.actions] == [
        ("rb-cartservice-1", "restart", "cartservice"),
        ("rb-checkoutservice-1", "scale", "checkoutservice"),
    ]


def test_recording_an_outcome_leaves_the_state_it_was_given_as_it_was() -> None:
    first = plan_runbook([alert("a1", "ServiceHighErrorRatio", service="cartservice")], {}, namespace=NS)
    before = json.dumps(first.state, sort_keys=True)
    state = record_outcome(first.state, "rb-cartservice-1", ok=False)
    assert json.dumps(first.state, sort_keys=True) == before
    assert first.state["incidents"]["rb-cartservice-1"]["action_ok"] is None
    assert state["incidents"]["rb-cartservice-1"]["action_ok"] is False


def test_the_action_runs_once_and_a_successful_one_resolves_the_incident_at_the_next_invocation() -> None:
    first = plan_runbook([alert("a1", "ServiceHighErrorRatio", service="cartservice")], {}, namespace=NS)
    state = record_outcome(first.state, "rb-cartservice-1", ok=True)
    later_alerts = [
        alert("a1", "ServiceHighErrorRatio", service="cartservice", end=50.0),
        alert("a2", "KubePodNotReady", pod="cartservice-5d8f7c9b6d-x2x9q", start=60.0),
    ]
    second = plan_runbook(later_alerts, state, namespace=NS)
    assert [(r.incident_id, r.status, r.alert_ids) for r in second.reports] == [
        ("rb-cartservice-1", "resolved", ("a1",)),
        ("rb-cartservice-2", "open", ("a2",)),
    ]
    assert [(s.incident_id, s.action) for s in second.actions] == [("rb-cartservice-2", "restart")]
    third = plan_runbook(later_alerts, second.state, namespace=NS)
    assert third.reports == () and third.actions == ()


def test_a_failed_action_is_not_repeated_and_keeps_the_incident_open() -> None:
    first = plan_runbook([alert("a1", "ServiceHighErrorRatio", service="cartservice")], {}, namespace=NS)
    state = record_outcome(first.state, "rb-cartservice-1", ok=False)
    more = [
        alert("a1", "ServiceHighErrorRatio", service="cartservice"),
        alert("a2", "KubeContainerOOMKilled", pod="cartservice-5d8f7c9b6d-x2x9q", start=30.0),
    ]
    second = plan_runbook(more, state, namespace=NS)
    assert [(r.incident_id, r.status, r.artifact) for r in second.reports] == [
        ("rb-cartservice-1", "open", "memory")
    ]
    assert second.actions == ()


def test_after_a_failed_action_the_incident_closes_once_its_alerts_end_and_new_alerts_open_another() -> None:
    first = plan_runbook([alert("a1", "ServiceHighErrorRatio", service="cartservice")], {}, namespace=NS)
    state = record_outcome(first.state, "rb-cartservice-1", ok=False)
    ended = [alert("a1", "ServiceHighErrorRatio", service="cartservice", end=90.0)]
    crashing = alert("a2", "KubePodCrashLooping", service="cartservice", start=300.0)
    second = plan_runbook([*ended, crashing], state, namespace=NS)
    assert [(r.incident_id, r.status, r.alert_ids) for r in second.reports] == [
        ("rb-cartservice-1", "resolved", ("a1",)),
        ("rb-cartservice-2", "open", ("a2",)),
    ]
    assert [(s.incident_id, s.action) for s in second.actions] == [("rb-cartservice-2", "restart")]


def test_the_planner_leaves_the_given_state_untouched() -> None:
    state: dict[str, Any] = {}
    plan_runbook([alert("a1", "ServiceHighErrorRatio", service="cartservice")], state, namespace=NS)
    assert state == {}


def test_workloads_come_from_service_deployment_or_pod_labels() -> None:
    assert workload_of({"service": "Cartservice"}) == "cartservice"
    assert workload_of({"deployment": "checkoutservice"}) == "checkoutservice"
    assert workload_of({"pod": "redis-cart-0"}) == "redis-cart"
    assert workload_of({"pod": "cartservice-5d8f7c9b6d-x2x9q"}) == "cartservice"
    assert workload_of({"node": "marathon-worker2"}) is None


def test_the_alert_history_keeps_the_latest_state_of_each_alert() -> None:
    history = [
        {"kind": "alert", "alert_id": "a1", "rule": "RedisDown", "labels": {}, "starts_at": 5.0},
        {"id": "a2", "labels": {"alertname": "KubePodFailed"}, "starts_at": 1.0},
        {"alert_id": "a1", "rule": "RedisDown", "labels": {}, "starts_at": 5.0, "ends_at": 9.0},
    ]
    alerts = parse_alerts({"alerts": history})
    assert [(a.alert_id, a.rule, a.firing) for a in alerts] == [("a2", "KubePodFailed", True),
                                                                ("a1", "RedisDown", False)]  # fmt: skip


def test_replica_counts_are_found_in_a_tool_result_of_any_shape() -> None:
    assert replicas_in({"items": [{"name": "x", "spec": {"replicas": 3}, "status": {"replicas": 1}}]}) == 3
    assert replicas_in([{"replicas": 2}]) == 2
    assert replicas_in("text") is None
