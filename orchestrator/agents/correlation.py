"""The alert-correlation agent: no model; alerts are grouped into incidents by time and topology, each
incident blames its most upstream failing service, and a small remedy table decides what to do.

This is the policy of open-source AIOps alert managers: an alert joins an open incident when it names the
same workload, or else a workload on a shared call path (one calls the other, directly or not, according to
the ``get_topology`` tool), and it started within ``window_s`` of the incident's latest alert. Failures
propagate from a callee to its callers, so the culprit is the incident's service that the most of its other
services depend on (object evidence, then the earliest alert, then the name break ties), and the artifact
KIND is the one the runbook's table blames for the culprit's strongest evidence. Each incident gets the first
remedy of its kind; while its alerts still fire at a later invocation the next remedy is tried, once each.
An incident is resolved once none of its alerts fires. The planner is a pure function; state lives in the
workspace.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.agents.inputs import (
    AgentEnv,
    AlertView,
    agent_options,
    load_alerts,
    read_state,
    run_main,
    workload_of,
    write_state,
)
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.agents.reporting import Report, file_report
from orchestrator.agents.runbook import Step, execute
from orchestrator.agents.runbook_rules import RULE_TABLE, rule_for, strongest
from orchestrator.errors import AgentError

log = logging.getLogger("orchestrator.agents.correlation")
NAME = "correlation"
STATE_FILE = "correlation-state.json"
DEFAULT_WINDOW_S = 360.0
NON_CRITICAL = " (non-critical)"

# The remedies tried for each blamed kind, in order. A rollback undoes a bad release or manifest change;
# missing capacity is scaled; anything transient (a killed process, stress, a broken path) is restarted.
REMEDIES: dict[str, tuple[str, ...]] = {
    "release": ("rollback", "restart"),
    "config": ("rollback", "restart"),
    "resources": ("rollback", "scale"),
    "probe": ("rollback", "restart"),
    "credentials": ("rollback", "restart"),
    "service": ("rollback",),
    "replicas": ("scale", "rollback"),
    "cpu": ("scale", "restart"),
    "memory": ("restart", "rollback"),
    "pod": ("restart", "rollback"),
    "io": ("restart",),
    "network": ("restart", "rollback"),
    "dns": ("restart",),
}
DEFAULT_REMEDIES = ("restart",)
SIGNAL_LABEL = "signal"


@dataclass(frozen=True)
class CallGraph:
    """Who depends on whom: ``reaches[a]`` holds every service ``a`` calls, directly or not."""

    reaches: Mapping[str, frozenset[str]]

    @classmethod
    def from_topology(cls, topology: Mapping[str, Any]) -> CallGraph:
        """The graph of a ``get_topology`` result (no side effects)."""
        calls: dict[str, set[str]] = {}
        for service in topology.get("services") or []:
            name = str(service.get("name", ""))
            callees = {str(c).removesuffix(NON_CRITICAL) for c in service.get("calls") or []}
            calls.setdefault(name, set()).update(callees)
        reaches: dict[str, frozenset[str]] = {}
        for start in calls:
            seen: set[str] = set()
            frontier = list(calls[start])
            while frontier:
                node = frontier.pop()
                if node not in seen:
                    seen.add(node)
                    frontier.extend(calls.get(node, ()))
            seen.discard(start)
            reaches[start] = frozenset(seen)
        return cls(reaches=reaches)

    def related(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` are one service or share a call path."""
        return a == b or b in self.reaches.get(a, frozenset()) or a in self.reaches.get(b, frozenset())

    def dependants(self, service: str, among: set[str]) -> int:
        """How many services of ``among`` call ``service``, directly or not."""
        return sum(1 for other in among if other != service and service in self.reaches.get(other, ()))


def evidence_of(alert: AlertView) -> str:
    """The runbook table's key for an alert: its ``signal`` label when the table knows it, else its rule's
    name (no side effects)."""
    signal = alert.labels.get(SIGNAL_LABEL, "")
    return signal if signal in RULE_TABLE else alert.rule


@dataclass(frozen=True)
class Plan:
    reports: tuple[Report, ...]
    actions: tuple[Step, ...]
    state: dict[str, Any]


def culprit_of(incident: Mapping[str, Any], graph: CallGraph) -> str:
    """The most upstream failing service of an incident: the one most of its services depend on (no side
    effects)."""
    evidence: Mapping[str, list[str]] = incident["evidence"]
    services = set(evidence)
    first: Mapping[str, float] = incident["first_seen"]

    def rank(service: str) -> tuple[int, bool, float, str]:
        named = rule_for(strongest(list(evidence[service]))).evidence
        return (-graph.dependants(service, services), named != "object", first[service], service)

    return min(services, key=rank)


def _report(incident_id: str, incident: Mapping[str, Any], status: str) -> Report:
    return Report(
        incident_id=incident_id,
        alert_ids=tuple(incident["alert_ids"]),
        culprits=(incident["culprit"],),
        artifact=incident["kind"],
        status=status,
    )


def _join(alert: AlertView, workload: str, incidents: Mapping[str, dict[str, Any]], graph: CallGraph,
          window_s: float) -> str | None:  # fmt: skip
    """The open incident ``alert`` belongs to, among those whose newest alert started within the window:
    the latest naming its workload, else the latest on a shared call path (no side effects)."""
    recent = [
        incident_id for incident_id, incident in sorted(incidents.items())
        if incident["status"] == "open" and alert.starts_at - incident["last_start"] <= window_s
    ]  # fmt: skip
    for same in (True, False):
        candidates = [
            incident_id for incident_id in recent
            if any(workload == s if same else graph.related(workload, s)
                   for s in incidents[incident_id]["evidence"])
        ]  # fmt: skip
        if candidates:
            return max(candidates, key=lambda i: (incidents[i]["last_start"], i))
    return None


def plan_correlation(alerts: list[AlertView], state: Mapping[str, Any], *, graph: CallGraph,
                     namespace: str, window_s: float) -> Plan:  # fmt: skip
    """The reports and remedies of this invocation, and the state after it (no side effects)."""
    new = copy.deepcopy(dict(state))
    incidents: dict[str, dict[str, Any]] = new.setdefault("incidents", {})
    filed = {alert_id for incident in incidents.values() for alert_id in incident["alert_ids"]}
    firing = {alert.alert_id for alert in alerts if alert.firing}
    reports: list[Report] = []
    actions: list[Step] = []

    # Incidents none of whose alerts fires any more are over; the others that were acted on and still
    # fire get their next remedy below.
    for incident_id, incident in sorted(incidents.items()):
        if incident["status"] == "open" and not firing.intersection(incident["alert_ids"]):
            incident["status"] = "resolved"
            reports.append(_report(incident_id, incident, "resolved"))

    changed: list[str] = []
    for alert in alerts:
        if alert.alert_id in filed or not alert.firing:
            continue
        if alert.labels.get("namespace", namespace) != namespace:
            continue
        workload = workload_of(alert.labels)
        if workload is None:
            continue  # node and zone alerts name no service to blame or act on
        joined = _join(alert, workload, incidents, graph, window_s)
        if joined is not None:
            incident_id = joined
        else:
            new["counter"] = int(new.get("counter", 0)) + 1
            incident_id = f"corr-{new['counter']}"
            incidents[incident_id] = {
                "alert_ids": [], "evidence": {}, "first_seen": {}, "last_start": alert.starts_at,
                "status": "open", "culprit": workload, "kind": "", "tried": [],
            }  # fmt: skip
        incident = incidents[incident_id]
        incident["alert_ids"].append(alert.alert_id)
        seen = incident["evidence"].setdefault(workload, [])
        if evidence_of(alert) not in seen:
            seen.append(evidence_of(alert))
        incident["first_seen"].setdefault(workload, alert.starts_at)
        incident["last_start"] = max(incident["last_start"], alert.starts_at)
        filed.add(alert.alert_id)
        if incident_id not in changed:
            changed.append(incident_id)

    for incident_id in changed:
        incident = incidents[incident_id]
        incident["culprit"] = culprit_of(incident, graph)
        incident["kind"] = rule_for(strongest(list(incident["evidence"][incident["culprit"]]))).kind
        reports.append(_report(incident_id, incident, "open"))

    for incident_id, incident in sorted(incidents.items()):
        if incident["status"] != "open":
            continue
        remedies = REMEDIES.get(incident["kind"], DEFAULT_REMEDIES)
        tried: list[list[str]] = incident["tried"]
        if tried and tried[-1][1] != incident["culprit"]:
            tried.clear()  # a new culprit starts its remedies afresh
        if len(tried) < len(remedies):
            action = remedies[len(tried)]
            tried.append([action, incident["culprit"]])
            actions.append(Step(incident_id=incident_id, action=action, service=incident["culprit"]))
    return Plan(reports=tuple(reports), actions=tuple(actions), state=new)


def window_of(options: Mapping[str, Any]) -> float:
    return float(options.get("window_s", DEFAULT_WINDOW_S))


def run(env: AgentEnv, client: ToolClient, *, window_s: float) -> None:
    path = Path(env.workspace) / STATE_FILE
    topology = client.call("get_topology")
    if not topology.get("ok") or not isinstance(topology.get("result"), dict):
        raise AgentError(f"get_topology failed: {topology.get('error')}")
    graph = CallGraph.from_topology(topology["result"])
    plan = plan_correlation(load_alerts(env.alerts_path), read_state(path), graph=graph,
                            namespace=env.namespace, window_s=window_s)  # fmt: skip
    write_state(path, plan.state)  # before acting: a kill at the budget must not repeat an action
    for item in plan.reports:
        outcome = file_report(client, item, notes="alert correlation")
        log.info("report %s (%s, %s, %s, %d alerts): %s", item.incident_id, item.status, item.culprits[0],
                 item.artifact, len(item.alert_ids), outcome.get("ok"))  # fmt: skip
    for step in plan.actions:
        execute(client, step)


def main() -> int:
    return run_main(_main)


def _main() -> int:
    env = AgentEnv.from_env()
    window_s = window_of(agent_options(NAME))
    log.info("invocation %d: alert correlation (window %.0f s)", env.invocation, window_s)
    with ToolClient.from_env() as client:
        run(env, client, window_s=window_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
