"""The oracle agent (validation only): reads the ground truth and answers as a perfect agent would.

It groups the alerts it was shown by attributing each to the active faults exactly as docs/metrics.md does
(namespace, a service in the fault's scope, start inside [inject, revert + grace]), files one incident per
fault naming its culprits and full artifact, and applies the fault's minimal remedy once the incident holds
an attributable alert (repairing earlier would silence the alerts that correlate it), never at the boundary
the fault was injected at. A one-shot fault (``one_shot``: a killed pod, which the cluster replaces by itself)
is the exception: its damage is done and its alerts follow anyway, so its workload is restarted at first
sight, before it recovers by itself.

The truth file (``MARATHON_ORACLE_TRUTH``, rewritten by the runner at each boundary) is a JSON object:
``{"now_s"?, "grace_s"?, "namespace"?, "faults": [{"fault_id", "catalog_id", "namespace"?, "target",
"culprits", "artifact", "scope", "inject_s", "revert_s"?, "planned_revert_s"?, "remedy": {"action",
"service", "field", "value"}, "one_shot"?}]}``. A fault that leaves the file was reverted after the last
boundary that listed it; its window closes at its planned revert plus grace when that falls since then, as
the scorer's does.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from orchestrator.agents.inputs import (
    AgentEnv,
    AlertView,
    load_alerts,
    read_state,
    run_main,
    write_state,
)
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.agents.reporting import Report, file_report
from orchestrator.errors import ConfigError
from orchestrator.score.attribution import names_service_in, normalise_name

log = logging.getLogger("orchestrator.agents.oracle")
TRUTH_ENV = "MARATHON_ORACLE_TRUTH"
STATE_FILE = "oracle-state.json"
MAX_ATTEMPTS = 3


class Remedy(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    action: str
    service: str | None = None
    field: str | None = None
    value: JsonValue = None


class TruthFault(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    fault_id: str = Field(min_length=1)
    catalog_id: str = ""
    namespace: str | None = None
    target: str
    culprits: list[str]
    artifact: str
    scope: list[str]
    inject_s: float
    revert_s: float | None = None
    planned_revert_s: float | None = None
    remedy: Remedy
    one_shot: bool = False


class Truth(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    now_s: float | None = None
    grace_s: float = 0.0
    namespace: str | None = None
    faults: list[TruthFault] = Field(default_factory=list)


def load_truth(path: str | None) -> Truth:
    if not path or not Path(path).is_file():
        return Truth()
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(payload, list):
            payload = {"faults": payload}
        return Truth.model_validate(payload)
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ConfigError(f"{path}: the oracle truth is not valid: {exc}") from exc


@dataclass(frozen=True)
class Call:
    """One remedy as a tool call."""

    fault_id: str
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class OraclePlan:
    reports: tuple[Report, ...]
    calls: tuple[Call, ...]
    state: dict[str, Any]


def incident_of(fault_id: str) -> str:
    return f"oracle-{fault_id}"


def remedy_call(fault: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The tool call that applies a fault's minimal remedy, or None when none applies (no side effects)."""
    remedy = fault["remedy"]
    action, field, value = remedy["action"], remedy.get("field") or "", remedy.get("value")
    base: dict[str, Any] = {
        "incident_id": incident_of(fault["fault_id"]),
        "service": remedy.get("service") or fault["target"],
    }
    rollback = ("rollback_service", base)
    if action in ("rollback", "submit_patch"):
        return rollback  # a rollback restores the image a fault build replaced, as a fixed build would
    if action == "restart":
        return ("restart_service", base)
    if action == "scale" or field == "replicas":
        return ("scale_service", {**base, "replicas": int(value) if value is not None else 1})
    if action == "update_service" or (action == "update_config" and field in ("targetPort", "port")):
        key = "port" if field == "port" else "target_port"
        return ("update_service", {**base, key: value})
    if action == "uncordon_node":
        # The displaced workload is the fault's target: the uncordon gives its pods their node back.
        where = {"node": str(value)} if value is not None else {"zone": _zone_of(fault["artifact"])}
        return ("uncordon_node", {"incident_id": base["incident_id"], **where, "services": [fault["target"]]})
    if action == "set_feature_flag":
        flag = field.removeprefix("flags/")
        return ("set_feature_flag", {"incident_id": base["incident_id"], "flag": flag, "variant": str(value)})
    if action == "wait":
        if fault.get("one_shot"):
            # A killed pod is replaced by itself. One restart of the target still confirms that a clean
            # replica serves, and only an intervention lets the probe credit a repair
            # (docs/metrics.md, "Repaired (Rep)").
            return ("restart_service", base)
        return None  # nothing the tools reach ends it (chaos the agent cannot see): wait for the revert
    if action != "update_config":
        return None
    parts = field.split("/")
    if parts[0] == "env" and len(parts) == 2:
        return ("update_config", {**base, "env": {parts[1]: None if value is None else str(value)}})
    if parts[0] == "port" and len(parts) == 2 and value is not None:
        return ("update_config", {**base, "ports": {parts[1]: int(str(value))}})
    if parts[0] == "resources" and len(parts) == 3 and value is not None:
        return ("update_config", {**base, "resources": {parts[1]: {parts[2]: str(value)}}})
    if parts[0] in ("resources", "probe", "image"):
        # A cleared limit or a probe has no update_config form; the change made a new revision to undo.
        return rollback
    return None


def _zone_of(artifact: str) -> str:
    """The zone of a ``node:zone/<zone>`` artifact: a remedy that names no node uncordons every cordoned node
    of it (no side effects)."""
    return artifact.partition(":")[2].removeprefix("zone/")


def drains_zone(fault: dict[str, Any]) -> bool:
    """Whether the fault took a whole zone down: its site fails over, and the zone's nodes are uncordoned once
    the fault is seen, so that the site comes back as the standby (no side effects)."""
    return fault["remedy"]["action"] == "uncordon_node" and fault["remedy"].get("value") is None


def revision_before(
    history: dict[str, Any],
    *,
    inject_s: float,
    now_s: float,
    build: str | None = None,
    carriers: frozenset[str] = frozenset(),
) -> int | None:
    """The revision that was serving when the fault was injected, from a rollout history (no side effects).

    A restart after the injection (for an overlapping fault) adds a revision that still carries the fault's
    change, so "the previous revision" would undo only the restart. The revision in effect at injection is
    the highest-numbered one created before it (a revision rolled back to is renumbered, not recreated),
    leaving out any that runs the fault's ``build`` (an image tag) or is one of its ``carriers`` (the
    ReplicaSets an earlier injection of the same entry made): the same change made again reuses the
    ReplicaSet it made the first time, renumbered but created long ago, and a site failover on top of it
    leaves that one below the current revision.
    """
    best: int | None = None
    for item in history.get("revisions") or []:
        age, number = item.get("age_s"), item.get("revision")
        if age is None or number is None or now_s - float(age) >= inject_s - 0.5:
            continue
        if build and any(str(image).endswith(f":{build}") for image in item.get("images") or []):
            continue
        if item.get("name") in carriers:
            continue
        best = max(best or 0, int(number))
    current = history.get("current_revision")
    if best is None or (current is not None and str(best) == str(current)):
        return None
    return best


def build_of(fault: dict[str, Any]) -> str | None:
    """The image tag a fault released (``release:<workload>@<tag>``), or None (no side effects)."""
    kind, _, reference = str(fault.get("artifact", "")).partition(":")
    if kind != "release":
        return None
    return reference.partition("@")[2] or None


def _revert_bound(known: dict[str, Any], now_s: float | None) -> float:
    """When a fault that left the truth file was reverted, as the scorer will see it (no side effects).

    It was reverted after the last boundary that listed it and at the latest now. The planned revert is that
    instant when it falls there (the scorer's window is revert + grace); otherwise the last boundary that
    listed it bounds the window safely.
    """
    last = known.get("listed_s", known.get("last_seen_s"))
    last = float(last if last is not None else known["inject_s"])
    planned = known.get("planned_revert_s")
    if planned is not None and float(planned) > last and (now_s is None or float(planned) <= now_s):
        return float(planned)
    return last


def _attributable(alert: AlertView, fault: dict[str, Any]) -> bool:
    end = fault.get("window_end_s")
    if alert.starts_at < fault["inject_s"] or (end is not None and alert.starts_at > end):
        return False
    if alert.labels.get("namespace") != fault["namespace"]:
        return False
    return names_service_in(alert.labels, frozenset(normalise_name(s) for s in fault["scope"]))


def plan_oracle(
    alerts: list[AlertView], truth: Truth, state: dict[str, Any], *, namespace: str
) -> OraclePlan:
    """Reports and remedy calls for this invocation, and the state after it (no side effects)."""
    new = copy.deepcopy(state)
    faults: dict[str, dict[str, Any]] = new.setdefault("faults", {})
    # Without the boundary time, the newest alert change is a lower bound of "now" the history proves.
    times = [t for alert in alerts for t in (alert.starts_at, alert.ends_at) if t is not None]
    now_s = truth.now_s if truth.now_s is not None else max(times, default=None)
    listed = {fault.fault_id for fault in truth.faults}
    for fault_id, known in faults.items():
        if fault_id not in listed and known.get("window_end_s") is None:
            known["window_end_s"] = _revert_bound(known, now_s) + known["grace_s"]
            known["active"] = False
    for listed_fault in truth.faults:
        known = faults.setdefault(
            listed_fault.fault_id, {"alert_ids": [], "attempts": 0, "remedied": False, "reported": None}
        )
        known.update(listed_fault.model_dump(mode="json", exclude={"namespace", "revert_s"}))
        if now_s is not None:
            known["listed_s"] = now_s
        known["namespace"] = listed_fault.namespace or truth.namespace or namespace
        known["grace_s"] = truth.grace_s
        if now_s is not None:
            known["last_seen_s"] = max(now_s, known.get("last_seen_s") or now_s)
        revert_s = listed_fault.revert_s
        known["active"] = revert_s is None
        known["window_end_s"] = None if revert_s is None else revert_s + truth.grace_s

    reports: list[Report] = []
    calls: list[Call] = []
    for fault_id in sorted(faults, key=lambda f: (faults[f]["inject_s"], f)):
        fault = faults[fault_id]
        for alert in alerts:
            if alert.alert_id not in fault["alert_ids"] and _attributable(alert, fault):
                fault["alert_ids"].append(alert.alert_id)
        # A one-shot fault (a killed pod) did its damage at injection and its alerts follow whatever the
        # agent does, so it is answered at first sight; recovery would otherwise come before any remedy.
        # So is a drained node: its pods were evicted at injection and start elsewhere by themselves. A
        # drained zone is not: uncordoned at once, the shop would come back in the same site; its site fails
        # over, and the zone is given back once its alerts say what happened.
        one_shot = bool(fault.get("one_shot")) or (
            fault["remedy"]["action"] == "uncordon_node" and not drains_zone(fault)
        )
        if not fault["alert_ids"] and not one_shot:
            continue  # nothing to correlate yet: reporting or repairing now would earn nothing
        status = "mitigated" if fault["remedied"] else "open"
        snapshot = [sorted(fault["alert_ids"]), status]
        if fault["alert_ids"] and fault["reported"] != snapshot:
            fault["reported"] = snapshot
            reports.append(_report(fault, status))
        call = remedy_call(fault)
        # At the boundary of its injection a lasting fault has not acted yet; an alert already attributable
        # to it comes from an overlapping fault, and a remedy now would precede the symptom it is to cure.
        started = one_shot or now_s is None or now_s > fault["inject_s"]
        due = fault["active"] and not fault["remedied"] and fault["attempts"] < MAX_ATTEMPTS and started
        if call is not None and due:
            fault["attempts"] += 1
            calls.append(Call(fault_id=fault_id, tool=call[0], args=call[1]))
    return OraclePlan(reports=tuple(reports), calls=tuple(calls), state=new)


def _report(fault: dict[str, Any], status: str) -> Report:
    return Report(
        incident_id=incident_of(fault["fault_id"]),
        alert_ids=tuple(sorted(fault["alert_ids"])),
        culprits=tuple(sorted(fault["culprits"])),
        artifact=fault["artifact"],
        status=status,
    )


def record_remedy(state: dict[str, Any], fault_id: str, *, ok: bool) -> tuple[dict[str, Any], Report | None]:
    """The state after a remedy finished, and the follow-up report when it worked (no side effects)."""
    new = copy.deepcopy(state)
    fault = new["faults"][fault_id]
    if not ok:
        return new, None
    fault["remedied"] = True
    if not fault["alert_ids"]:
        return new, None  # reported as mitigated once an alert to file it under arrives
    fault["reported"] = [sorted(fault["alert_ids"]), "mitigated"]
    return new, _report(fault, "mitigated")


def send_report(client: ToolClient, item: Report) -> None:
    outcome = file_report(client, item, notes="oracle")
    log.info("report %s (%s): %s", item.incident_id, item.status, outcome)


def made_since(history: dict[str, Any], *, inject_s: float, now_s: float) -> list[str]:
    """The ReplicaSets of a rollout history created since the injection: each carries the fault's change
    (no side effects)."""
    return sorted(
        str(item["name"])
        for item in history.get("revisions") or []
        if item.get("name")
        and item.get("age_s") is not None
        and now_s - float(item["age_s"]) >= inject_s - 0.5
    )


def _rollback_args(
    client: ToolClient, call: Call, fault: dict[str, Any], *, now_s: float | None, carriers: frozenset[str]
) -> tuple[dict[str, Any], list[str]]:
    """The rollback's arguments (the revision in effect at injection), and the ReplicaSets that carry the
    fault's change."""
    if call.tool != "rollback_service" or now_s is None:
        return call.args, []
    history = client.call("get_rollout_history", service=call.args["service"])
    if not history.get("ok") or not isinstance(history.get("result"), dict):
        return call.args, []
    inject_s = float(fault["inject_s"])
    target = revision_before(
        history["result"], inject_s=inject_s, now_s=now_s, build=build_of(fault), carriers=carriers
    )
    made = made_since(history["result"], inject_s=inject_s, now_s=now_s)
    return (call.args if target is None else {**call.args, "to_revision": target}), made


def uncordon_zone(client: ToolClient, args: dict[str, Any]) -> dict[str, Any]:
    """Uncordon every cordoned node of ``args["zone"]``, one ``uncordon_node`` call each; ok when there was
    one and every call was."""
    listed = client.call("get_resources", kind="nodes")
    items = listed.get("result", {}).get("items") if isinstance(listed.get("result"), dict) else None
    nodes = sorted(
        str(item["name"])
        for item in items or []
        if item.get("zone") == args["zone"] and item.get("unschedulable")
    )
    rest = {key: value for key, value in args.items() if key != "zone"}
    outcomes = [client.call("uncordon_node", **rest, node=node) for node in nodes]
    ok = bool(outcomes) and all(outcome.get("ok") for outcome in outcomes)
    return {"ok": ok, "result": {"zone": args["zone"], "nodes": nodes}}


def run(env: AgentEnv, client: ToolClient, truth: Truth) -> None:
    path = Path(env.workspace) / STATE_FILE
    plan = plan_oracle(load_alerts(env.alerts_path), truth, read_state(path), namespace=env.namespace)
    state = plan.state
    write_state(path, state)
    for item in plan.reports:
        send_report(client, item)
    for call in plan.calls:
        fault = state["faults"][call.fault_id]
        # The ReplicaSets an entry's earlier injections made: the same change made again reuses them.
        carriers: dict[str, list[str]] = state.setdefault("carriers", {})
        known = carriers.get(fault.get("catalog_id", ""), [])
        args, made = _rollback_args(client, call, fault, now_s=truth.now_s, carriers=frozenset(known))
        if made and fault.get("catalog_id"):
            carriers[fault["catalog_id"]] = sorted({*known, *made})
        if call.tool == "uncordon_node" and "zone" in args:
            outcome = uncordon_zone(client, args)
        else:
            outcome = client.call(call.tool, **args)
        log.info("remedy %s for %s: %s", call.tool, call.fault_id, outcome)
        state, follow_up = record_remedy(state, call.fault_id, ok=bool(outcome.get("ok")))
        write_state(path, state)
        if follow_up is not None:
            send_report(client, follow_up)


def main() -> int:
    return run_main(_main)


def _main() -> int:
    env = AgentEnv.from_env()
    truth = load_truth(os.environ.get(TRUTH_ENV))
    log.info("invocation %d: oracle over %d active faults", env.invocation, len(truth.faults))
    with ToolClient.from_env() as client:
        run(env, client, truth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
