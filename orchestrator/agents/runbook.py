"""The runbook agent: no model, one incident per workload, one action per incident from the rule table.

Each invocation: incidents whose action succeeded last time are reported resolved; alerts not yet filed are
grouped by the workload their labels name (a workload with an open incident gets the alert added, otherwise
a new incident opens); every changed incident is reported with the workload as culprit and the kind of its
strongest signal (the alert rules' ``signal`` label); an incident without an action yet gets its action,
once. An incident closes (resolved) at the invocation after its action succeeded, or once all its alerts
ended after a failed action. State lives in the workspace.
"""

from __future__ import annotations

import copy
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.agents.inputs import (
    AgentEnv,
    AlertView,
    load_alerts,
    read_state,
    run_main,
    workload_of,
    write_state,
)
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.agents.reporting import Report, file_report
from orchestrator.agents.runbook_rules import rule_for, signal_of, strongest

log = logging.getLogger("orchestrator.agents.runbook")
STATE_FILE = "runbook-state.json"
MAX_REPLICAS = 10


@dataclass(frozen=True)
class Step:
    incident_id: str
    action: str
    service: str


@dataclass(frozen=True)
class RunbookPlan:
    reports: tuple[Report, ...]
    actions: tuple[Step, ...]
    state: dict[str, Any]


def _report(incident_id: str, incident: dict[str, Any], status: str) -> Report:
    signal = strongest(list(incident["signals"]))
    return Report(
        incident_id=incident_id,
        alert_ids=tuple(incident["alert_ids"]),
        culprits=(incident["workload"],),
        artifact=rule_for(signal).kind,
        status=status,
    )


def plan_runbook(alerts: list[AlertView], state: dict[str, Any], *, namespace: str) -> RunbookPlan:
    """Incident reports and actions for this invocation, and the state after it (no side effects)."""
    new = copy.deepcopy(state)
    incidents: dict[str, dict[str, Any]] = new.setdefault("incidents", {})
    open_by_workload: dict[str, str] = new.setdefault("open_by_workload", {})
    counters: dict[str, int] = new.setdefault("counters", {})
    filed: set[str] = {alert_id for incident in incidents.values() for alert_id in incident["alert_ids"]}
    reports: list[Report] = []

    # An action that succeeded last time closes its incident now, and so does a failed one once every alert
    # of the incident has ended (else it would absorb the alerts of every later fault); later alerts open a
    # fresh incident.
    firing = {alert.alert_id for alert in alerts if alert.firing}
    for incident_id, incident in sorted(incidents.items()):
        ended = incident.get("action_ok") is False and not firing.intersection(incident["alert_ids"])
        if incident["status"] == "open" and (incident.get("action_ok") is True or ended):
            incident["status"] = "resolved"
            reports.append(_report(incident_id, incident, "resolved"))
            if open_by_workload.get(incident["workload"]) == incident_id:
                del open_by_workload[incident["workload"]]

    changed: list[str] = []
    for alert in alerts:
        if alert.alert_id in filed:
            continue
        if alert.labels.get("namespace", namespace) != namespace:
            continue
        workload = workload_of(alert.labels)
        if workload is None:
            continue  # node and zone alerts name no workload to act on
        if workload in open_by_workload:
            incident_id = open_by_workload[workload]
        else:
            counters[workload] = counters.get(workload, 0) + 1
            incident_id = f"rb-{workload}-{counters[workload]}"
            incidents[incident_id] = {
                "workload": workload, "alert_ids": [], "signals": [], "status": "open",
                "action": None, "action_ok": None,
            }  # fmt: skip
            open_by_workload[workload] = incident_id
        incident = incidents[incident_id]
        incident["alert_ids"].append(alert.alert_id)
        signal = signal_of(alert.labels)
        if signal not in incident["signals"]:
            incident["signals"].append(signal)
        filed.add(alert.alert_id)
        if incident_id not in changed:
            changed.append(incident_id)

    actions: list[Step] = []
    for incident_id in changed:
        incident = incidents[incident_id]
        reports.append(_report(incident_id, incident, "open"))
        if incident["action"] is None:
            action = rule_for(strongest(list(incident["signals"]))).action
            incident["action"] = action
            actions.append(Step(incident_id=incident_id, action=action, service=incident["workload"]))
    return RunbookPlan(reports=tuple(reports), actions=tuple(actions), state=new)


def record_outcome(state: dict[str, Any], incident_id: str, *, ok: bool) -> dict[str, Any]:
    """The state after an action of ``incident_id`` finished (no side effects): the incident and the maps
    that hold it are new, the rest is shared with ``state``, which is not changed."""
    incidents = dict(state["incidents"])
    incidents[incident_id] = {**incidents[incident_id], "action_ok": ok}
    return {**state, "incidents": incidents}


def replicas_in(result: Any) -> int | None:
    """The first ``replicas`` count found in a tool result (spec before status), else None (no side
    effects)."""
    if isinstance(result, dict):
        spec = result.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("replicas"), int):
            return int(spec["replicas"])
        if isinstance(result.get("replicas"), int):
            return int(result["replicas"])
        values = list(result.values())
    elif isinstance(result, list):
        values = list(result)
    else:
        return None
    for value in values:
        found = replicas_in(value)
        if found is not None:
            return found
    return None


def execute(client: ToolClient, step: Step) -> bool:
    """Carry out one action through the tools; True when the tool reported success."""
    if step.action == "rollback":
        outcome = client.call("rollback_service", incident_id=step.incident_id, service=step.service)
    elif step.action == "restart":
        outcome = client.call("restart_service", incident_id=step.incident_id, service=step.service)
    else:
        current = client.call("get_resources", kind="deployments", name=step.service)
        count = replicas_in(current.get("result")) if current.get("ok") else None
        replicas = min(MAX_REPLICAS, max((count or 0) + 1, 2))
        outcome = client.call(
            "scale_service", incident_id=step.incident_id, service=step.service, replicas=replicas
        )
    log.info("%s %s for %s: %s", step.action, step.service, step.incident_id, outcome)
    return bool(outcome.get("ok"))


def report(client: ToolClient, item: Report) -> None:
    outcome = file_report(client, item, notes="runbook")
    log.info("report %s (%s, %s, %d alerts): %s", item.incident_id, item.status, item.artifact,
             len(item.alert_ids), outcome.get("ok"))  # fmt: skip


def run(env: AgentEnv, client: ToolClient) -> None:
    path = Path(env.workspace) / STATE_FILE
    alerts = load_alerts(env.alerts_path)
    plan = plan_runbook(alerts, read_state(path), namespace=env.namespace)
    state = plan.state
    write_state(path, state)
    for item in plan.reports:
        report(client, item)
    for step in plan.actions:
        state = record_outcome(state, step.incident_id, ok=execute(client, step))
        write_state(path, state)  # saved per action: a kill at the budget must not repeat it


def main() -> int:
    return run_main(_main)


def _main() -> int:
    env = AgentEnv.from_env()
    log.info("invocation %d: runbook", env.invocation)
    with ToolClient.from_env() as client:
        run(env, client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
