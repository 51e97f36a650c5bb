"""The runbook's rule table: for each ``signal`` label of ``alert_rules/*.yaml``, an action and a blamed kind.

The policy is the classic on-call runbook: roll back on error, latency and stalled-rollout alerts, scale up on
unavailable-deployment and load alerts, restart on pod failures and on anything else. A signal that names the
broken object (a pod, a deployment, a container, a datastore, a node) outranks a symptom (service-level
errors, latency, traffic), because it points closer to the cause. The table is keyed on the label, never on an
alert's name, so an app's own rules need no entry of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Action = Literal["rollback", "scale", "restart"]
Evidence = Literal["object", "symptom"]
SIGNAL_LABEL = "signal"


@dataclass(frozen=True)
class Rule:
    action: Action
    kind: str  # the artifact KIND the runbook blames (docs/metrics.md's closed vocabulary)
    evidence: Evidence


# In order of strength within each evidence class: the first signal of an incident in this order decides.
RULE_TABLE: dict[str, Rule] = {
    # Pods and containers: the broken object is named.
    "pod-failure": Rule("restart", "pod", "object"),
    "memory": Rule("restart", "memory", "object"),
    "readiness": Rule("restart", "probe", "object"),
    "scheduling": Rule("restart", "resources", "object"),
    # A pull or configuration error is an error of the rollout itself.
    "image": Rule("rollback", "release", "object"),
    "container-config": Rule("rollback", "config", "object"),
    # Deployments: stalled rollouts are rolled back, missing capacity is scaled up.
    "rollout": Rule("rollback", "release", "object"),
    "replicas": Rule("scale", "replicas", "object"),
    "cpu-throttling": Rule("scale", "cpu", "object"),
    # Datastores and queues that are down or full name the broken object.
    "datastore-down": Rule("restart", "pod", "object"),
    "datastore-memory": Rule("restart", "memory", "object"),
    # Nodes and zones: no workload is named, so these open no incident (restart is the catch-all).
    "node": Rule("restart", "node", "object"),
    # Service symptoms: errors and latency blame the latest release.
    "errors": Rule("rollback", "release", "symptom"),
    "latency": Rule("rollback", "release", "symptom"),
    "datastore-latency": Rule("rollback", "io", "symptom"),
    # Load: more replicas.
    "cpu-saturation": Rule("scale", "cpu", "symptom"),
    "connections": Rule("scale", "replicas", "symptom"),
    "backlog": Rule("scale", "replicas", "symptom"),
    # Traffic that vanished: the catch-all restart.
    "traffic": Rule("restart", "pod", "symptom"),
}

# An alert without a signal the table knows (a newer rule pack) falls to the catch-all.
DEFAULT_RULE = Rule(action="restart", kind="pod", evidence="symptom")
_ORDER = {signal: index for index, signal in enumerate(RULE_TABLE)}


def signal_of(labels: Mapping[str, str]) -> str:
    """The signal an alert's labels carry, or "" when it has none."""
    return labels.get(SIGNAL_LABEL, "")


def rule_for(signal: str) -> Rule:
    return RULE_TABLE.get(signal, DEFAULT_RULE)


def strongest(signals: list[str]) -> str:
    """The signal that decides an incident: object evidence first, then table order, then name (no side
    effects)."""
    if not signals:
        raise ValueError("an incident has at least one signal")
    return min(
        signals,
        key=lambda signal: (rule_for(signal).evidence != "object", _ORDER.get(signal, len(_ORDER)), signal),
    )
