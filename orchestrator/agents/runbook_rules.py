"""The runbook's rule table: for every alert rule of ``alert_rules/*.yaml``, one action and a blamed kind.

The policy is the classic on-call runbook: roll back on error, latency and stalled-rollout alerts, scale up on
unavailable-deployment and load alerts, restart on pod failures and on anything else. A rule that names the
broken object (a pod, a deployment, a container, a datastore, a node) outranks a symptom rule (service-level
errors, latency, traffic), because it points closer to the cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["rollback", "scale", "restart"]
Evidence = Literal["object", "symptom"]


@dataclass(frozen=True)
class Rule:
    action: Action
    kind: str  # the artifact KIND the runbook blames (docs/metrics.md's closed vocabulary)
    evidence: Evidence


def _rules(evidence: Evidence, action: Action, kind: str, *names: str) -> dict[str, Rule]:
    return {name: Rule(action=action, kind=kind, evidence=evidence) for name in names}


RULE_TABLE: dict[str, Rule] = {
    # Pods and containers: the broken object is named.
    **_rules(
        "object", "restart", "pod",
        "KubeContainerRestarted", "KubePodRestartingRepeatedly", "KubePodCrashLooping", "KubePodFailed",
        "KubeContainerWaiting", "KubePodReplaced",
    ),
    **_rules("object", "restart", "memory", "KubeContainerOOMKilled", "ContainerMemoryNearLimit"),
    **_rules("object", "restart", "probe", "KubePodNotReady"),
    **_rules("object", "restart", "resources", "KubePodPending"),
    # A pull or configuration error is an error of the rollout itself.
    **_rules("object", "rollback", "release", "KubePodImagePullBackOff"),
    **_rules("object", "rollback", "config", "KubeContainerConfigError"),
    # Deployments: stalled rollouts are rolled back, missing capacity is scaled up.
    **_rules(
        "object", "rollback", "release", "KubeDeploymentRolloutStalled", "KubeDeploymentGenerationMismatch"
    ),
    **_rules(
        "object", "scale", "replicas",
        "KubeDeploymentReplicasUnavailable", "KubeDeploymentNoAvailableReplicas",
        "KubeDeploymentReplicasMismatch", "KubeDeploymentScaledToZero",
    ),
    **_rules("object", "scale", "cpu", "ContainerCPUThrottlingHigh"),
    # Datastores and queues that are down or full name the broken object.
    **_rules("object", "restart", "pod", "RedisDown", "MySQLDown", "PostgresDown", "RabbitMQDown"),
    **_rules("object", "restart", "memory", "RedisMemoryNearMax"),
    # Nodes and zones: no workload is named, so these open no incident (restart is the catch-all).
    **_rules(
        "object", "restart", "node",
        "KubeNodeNotReady", "KubeNodeMemoryPressure", "KubeNodeDiskPressure", "KubeZoneDown",
    ),
    # Service symptoms: errors and latency blame the latest release.
    **_rules(
        "symptom", "rollback", "release",
        "ServiceHighErrorRatio", "ServiceErrorRatioCritical", "ServiceLatencyP99High",
        "ServiceLatencyP99Critical", "OnlineBoutiqueCheckoutErrors", "OnlineBoutiqueCartErrors",
        "OnlineBoutiqueFrontendSlowRequests", "TrainTicketGatewayErrors", "TrainTicketBookingErrors",
        "AstronomyShopFrontendProxyErrors", "AstronomyShopCheckoutErrors", "AstronomyShopPaymentErrors",
    ),
    **_rules("symptom", "rollback", "io", "RedisSlowCommands", "MySQLSlowQueries"),
    # Load: more replicas.
    **_rules("symptom", "scale", "cpu", "ServiceCPUSaturated"),
    **_rules(
        "symptom", "scale", "replicas",
        "MySQLTooManyConnections", "PostgresTooManyConnections", "RabbitMQQueueBacklog",
        "KafkaConsumerLagHigh", "KafkaConsumerLagGrowing", "AstronomyShopOrderConsumerLag",
    ),
    # Traffic that vanished: the catch-all restart.
    **_rules("symptom", "restart", "pod", "ServiceTrafficDrop", "ServiceTrafficStopped"),
}  # fmt: skip

# Any rule the table does not know (a newer rule pack) falls to the catch-all.
DEFAULT_RULE = Rule(action="restart", kind="pod", evidence="symptom")
_ORDER = {name: index for index, name in enumerate(RULE_TABLE)}


def rule_for(name: str) -> Rule:
    return RULE_TABLE.get(name, DEFAULT_RULE)


def strongest(rule_names: list[str]) -> str:
    """The rule that decides an incident: object evidence first, then table order, then name (no side
    effects)."""
    if not rule_names:
        raise ValueError("an incident has at least one alert rule")
    return min(
        rule_names,
        key=lambda name: (rule_for(name).evidence != "object", _ORDER.get(name, len(_ORDER)), name),
    )
