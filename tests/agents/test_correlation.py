"""The alert-correlation agent: incidents grouped by time and call path, the most upstream culprit, a remedy
table tried in order, all as a pure function of the alerts, the topology and its state."""

from __future__ import annotations

from typing import Any

from orchestrator.agents.correlation import REMEDIES, CallGraph, plan_correlation
from orchestrator.agents.inputs import AlertView
from orchestrator.vocabulary.artifacts import ARTIFACT_KINDS

NS = "online-boutique"
# The runbook table is keyed by rule name or by the rules' signal label: the alerts here carry both.
SIGNALS = {"ServiceHighErrorRatio": "errors", "RedisDown": "datastore-down",
           "KubePodCrashLooping": "pod-failure", "KubeContainerOOMKilled": "memory"}  # fmt: skip
TOPOLOGY: dict[str, Any] = {
    "services": [
        {"name": "frontend", "calls": ["cartservice", "checkoutservice", "adservice (non-critical)"]},
        {"name": "checkoutservice", "calls": ["cartservice", "paymentservice"]},
        {"name": "cartservice", "calls": ["redis-cart"]},
        {"name": "paymentservice", "calls": []},
        {"name": "adservice", "calls": []},
        {"name": "redis-cart", "calls": []},
    ]
}
GRAPH = CallGraph.from_topology(TOPOLOGY)


def alert(alert_id: str, rule: str, service: str, *, start: float, end: float | None = None) -> AlertView:
    labels = {"namespace": NS, "service": service, "signal": SIGNALS[rule]}
    return AlertView(alert_id=alert_id, rule=rule, labels=labels, starts_at=start, ends_at=end)


def plan(alerts: list[AlertView], state: dict[str, Any] | None = None, window_s: float = 300.0) -> Any:
    return plan_correlation(alerts, state or {}, graph=GRAPH, namespace=NS, window_s=window_s)


def test_the_call_graph_follows_calls_transitively_and_ignores_the_non_critical_mark() -> None:
    assert GRAPH.reaches["frontend"] == {"cartservice", "checkoutservice", "adservice", "paymentservice",
                                         "redis-cart"}  # fmt: skip
    assert GRAPH.related("redis-cart", "frontend") and not GRAPH.related("paymentservice", "cartservice")


def test_alerts_on_one_call_path_within_the_window_make_one_incident_blaming_the_deepest_service() -> None:
    alerts = [
        alert("a1", "ServiceHighErrorRatio", "frontend", start=100.0),
        alert("a2", "ServiceHighErrorRatio", "cartservice", start=130.0),
        alert("a3", "RedisDown", "redis-cart", start=160.0),
    ]
    result = plan(alerts)
    assert [(r.incident_id, r.alert_ids, r.culprits, r.artifact, r.status) for r in result.reports] == [
        ("corr-1", ("a1", "a2", "a3"), ("redis-cart",), "pod", "open")
    ]
    actions = [(s.incident_id, s.action, s.service) for s in result.actions]
    assert actions == [("corr-1", "restart", "redis-cart")]


def test_unrelated_services_and_alerts_outside_the_window_open_separate_incidents() -> None:
    alerts = [
        alert("a1", "ServiceHighErrorRatio", "cartservice", start=100.0),
        alert("a2", "ServiceHighErrorRatio", "paymentservice", start=110.0),  # no shared call path
        alert("a3", "ServiceHighErrorRatio", "frontend", start=900.0),  # related, but long after
    ]
    result = plan(alerts)
    assert [(r.incident_id, r.alert_ids, r.culprits) for r in result.reports] == [
        ("corr-1", ("a1",), ("cartservice",)),
        ("corr-2", ("a2",), ("paymentservice",)),
        ("corr-3", ("a3",), ("frontend",)),
    ]


def test_a_later_alert_prefers_the_open_incident_of_its_own_workload_within_the_window() -> None:
    first = plan([alert("a1", "KubePodCrashLooping", "cartservice", start=100.0),
                  alert("a2", "ServiceHighErrorRatio", "paymentservice", start=110.0)])  # fmt: skip
    alerts = [alert("a1", "KubePodCrashLooping", "cartservice", start=100.0),
              alert("a2", "ServiceHighErrorRatio", "paymentservice", start=110.0),
              alert("a3", "ServiceHighErrorRatio", "cartservice", start=350.0),
              alert("a4", "ServiceHighErrorRatio", "cartservice", start=2000.0)]  # fmt: skip
    second = plan(alerts, first.state)
    assert [(r.incident_id, r.alert_ids, r.artifact) for r in second.reports] == [
        ("corr-1", ("a1", "a3"), "pod"), ("corr-3", ("a4",), "release")
    ]


def test_an_incident_still_firing_gets_the_next_remedy_once_and_then_no_more() -> None:
    alerts = [alert("a1", "ServiceHighErrorRatio", "cartservice", start=100.0)]
    states = [plan(alerts).state]
    actions = []
    for _ in range(3):
        step = plan(alerts, states[-1])
        states.append(step.state)
        actions.append([(s.action, s.service) for s in step.actions])
    assert REMEDIES["release"] == ("rollback", "restart")
    assert [(s.action, s.service) for s in plan(alerts).actions] == [("rollback", "cartservice")]
    assert actions == [[("restart", "cartservice")], [], []]
    assert all(not plan(alerts, state).reports for state in states)  # nothing changed: nothing re-filed


def test_an_incident_whose_alerts_all_ended_is_reported_resolved_once() -> None:
    opened = plan([alert("a1", "KubePodCrashLooping", "cartservice", start=100.0)])
    ended = [alert("a1", "KubePodCrashLooping", "cartservice", start=100.0, end=300.0)]
    closed = plan(ended, opened.state)
    assert [(r.incident_id, r.status) for r in closed.reports] == [("corr-1", "resolved")]
    assert closed.actions == ()
    assert plan(ended, closed.state).reports == ()


def test_alerts_of_other_namespaces_and_alerts_naming_no_workload_open_nothing() -> None:
    elsewhere = AlertView(alert_id="x", rule="ServiceHighErrorRatio", starts_at=1.0,
                          labels={"namespace": "kube-system", "service": "coredns"})  # fmt: skip
    node = AlertView(alert_id="n", rule="KubeNodeNotReady", starts_at=1.0, labels={"node": "worker-1"})
    result = plan([elsewhere, node])
    assert result.reports == () and result.actions == ()


def test_the_plan_is_a_pure_function_of_its_inputs() -> None:
    alerts = [alert("a1", "ServiceHighErrorRatio", "frontend", start=100.0),
              alert("a2", "KubeContainerOOMKilled", "checkoutservice", start=120.0)]  # fmt: skip
    state: dict[str, Any] = {}
    assert plan(alerts, state) == plan(alerts, state)
    assert state == {}


def test_every_kind_the_remedy_table_names_is_of_the_closed_vocabulary() -> None:
    assert set(REMEDIES) <= set(ARTIFACT_KINDS)
    assert {action for actions in REMEDIES.values() for action in actions} <= {"rollback", "restart", "scale"}
