"""Pod placement: filter nodes by selector, affinity and free requests, then spread replicas over nodes and
zones. Deterministic: ties break on node name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.podstate import SCHEDULING_EVENT_EVERY_S, qos_class
from orchestrator.twin.controllers.workloads import controller_uid
from orchestrator.twin.store import NODES, PODS, Store
from orchestrator.twin.timefmt import rfc3339
from orchestrator.vocabulary.quantities import parse_quantity

Obj = dict[str, Any]
ZONE_LABEL = "topology.kubernetes.io/zone"


def pod_requests(pod: Obj) -> tuple[float, float]:
    """(cpu cores, memory bytes) a pod requests; a limit without a request counts as the request."""
    cpu = memory = 0.0
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        requests = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        cpu += parse_quantity(requests.get("cpu", 0))
        memory += parse_quantity(requests.get("memory", 0))
    return cpu, memory


@dataclass
class NodeSlot:
    name: str
    zone: str
    labels: dict[str, str]
    cpu: float
    memory: float
    pods: int
    cordoned: bool = False
    used_cpu: float = 0.0
    used_memory: float = 0.0
    used_pods: int = 0


def slots(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, NodeSlot]:
    found: dict[str, NodeSlot] = {}
    for node in nodes:
        allocatable = node["status"]["allocatable"]
        labels = node["metadata"].get("labels") or {}
        found[node["metadata"]["name"]] = NodeSlot(
            name=node["metadata"]["name"],
            zone=labels.get(ZONE_LABEL, ""),
            labels=labels,
            cpu=parse_quantity(allocatable["cpu"]),
            memory=parse_quantity(allocatable["memory"]),
            pods=int(allocatable["pods"]),
            cordoned=bool((node.get("spec") or {}).get("unschedulable")),
        )
    for pod in pods:
        slot = found.get(pod["spec"].get("nodeName") or "")
        if slot is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        cpu, memory = pod_requests(pod)
        slot.used_cpu += cpu
        slot.used_memory += memory
        slot.used_pods += 1
    return found


def _expression_matches(expr: Obj, labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", "In"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def _affinity_matches(pod: Obj, labels: dict[str, str]) -> bool:
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_expression_matches(e, labels) for e in t.get("matchExpressions") or []) for t in terms)


@dataclass(frozen=True)
class Placement:
    node: str | None
    message: str  # why no node fits, in the scheduler's words


def place(pod: Obj, nodes: dict[str, NodeSlot], siblings: Iterable[Obj]) -> Placement:
    """Choose a node for ``pod`` (no side effects). ``siblings`` are pods with the same controller."""
    cpu, memory = pod_requests(pod)
    selector = pod["spec"].get("nodeSelector") or {}
    reasons: dict[str, int] = {}
    fitting: list[NodeSlot] = []
    for slot in sorted(nodes.values(), key=lambda s: s.name):
        if any(slot.labels.get(k) != v for k, v in selector.items()) or not _affinity_matches(
            pod, slot.labels
        ):
            reasons["node(s) didn't match Pod's node affinity/selector"] = (
                reasons.get("node(s) didn't match Pod's node affinity/selector", 0) + 1
            )
            continue
        problem = None
        if slot.cordoned:
            problem = "node(s) were unschedulable"
        elif slot.used_pods + 1 > slot.pods:
            problem = "Too many pods"
        elif slot.used_cpu + cpu > slot.cpu + 1e-9:
            problem = "Insufficient cpu"
        elif slot.used_memory + memory > slot.memory + 1e-6:
            problem = "Insufficient memory"
        if problem:
            reasons[problem] = reasons.get(problem, 0) + 1
            continue
        fitting.append(slot)
    if not fitting:
        return Placement(None, unschedulable_message(len(nodes), reasons))
    per_node: dict[str, int] = {}
    per_zone: dict[str, int] = {}
    for sibling in siblings:
        node_name = sibling["spec"].get("nodeName")
        if node_name in nodes:
            per_node[node_name] = per_node.get(node_name, 0) + 1
            zone = nodes[node_name].zone
            per_zone[zone] = per_zone.get(zone, 0) + 1
    best = min(fitting, key=lambda s: (per_zone.get(s.zone, 0), per_node.get(s.name, 0), s.used_pods, s.name))
    best.used_cpu += cpu
    best.used_memory += memory
    best.used_pods += 1
    return Placement(best.name, "")


def unschedulable_message(total: int, reasons: dict[str, int]) -> str:
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return (
        f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: "
        f"{total} No preemption victims found for incoming pod."
    )


class Scheduler:
    """The default scheduler's part: bind a pod to a node (with its pod IP) or say why it cannot."""

    def __init__(self, store: Store, events: EventRecorder) -> None:
        self.store = store
        self.events = events
        self._next_ip: dict[str, int] = {}
        self._noted: dict[str, float] = {}  # pod uid -> when FailedScheduling was last recorded

    def forget(self, uid: str) -> None:
        self._noted.pop(uid, None)

    def bind(self, pod: Obj, nodes: dict[str, NodeSlot], *, fits: bool, now: float) -> tuple[str, str] | None:
        """Bind ``pod`` and return (node, pod IP); or record why not and return None. ``fits`` is the
        runtime's say on whether the pod fits any node at all."""
        meta = pod["metadata"]
        owner = controller_uid(pod)
        siblings = [
            p
            for p in self.store.values(PODS)
            if owner is not None and controller_uid(p) == owner and p["spec"].get("nodeName")
        ]
        if pod["spec"].get("nodeName") in nodes:
            node_name: str | None = pod["spec"]["nodeName"]
            message = ""
        elif fits:
            placement = place(pod, nodes, siblings)
            node_name, message = placement.node, placement.message
        else:
            node_name = None
            message = unschedulable_message(len(nodes), {"Insufficient memory": len(nodes)})
        if node_name is None:
            self._note_unschedulable(pod, message, now)
            return None
        bound = {**pod, "spec": {**pod["spec"], "nodeName": node_name}}
        self.store.put(PODS, bound)
        self.events.record(
            involved=bound,
            reason="Scheduled",
            now=now,
            component="default-scheduler",
            message=f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}",
        )
        self._noted.pop(meta["uid"], None)
        return node_name, self._allocate_ip(node_name)

    def _note_unschedulable(self, pod: Obj, message: str, now: float) -> None:
        uid = pod["metadata"]["uid"]
        last = self._noted.get(uid)
        if last is None or now - last >= SCHEDULING_EVENT_EVERY_S:
            self.events.record(
                involved=pod,
                reason="FailedScheduling",
                now=now,
                type_="Warning",
                component="default-scheduler",
                message=message,
            )
            self._noted[uid] = now
        old_status = pod.get("status") or {}
        old = next((c for c in old_status.get("conditions") or [] if c["type"] == "PodScheduled"), None)
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": old["lastTransitionTime"] if old else rfc3339(now),
            "reason": "Unschedulable",
            "message": message,
        }
        status = {"phase": "Pending", "conditions": [condition], "qosClass": qos_class(pod)}
        if status != old_status:
            self.store.put(PODS, {**pod, "status": status})

    def _allocate_ip(self, node_name: str) -> str:
        node = self.store.get(NODES, "", node_name)
        prefix = node["spec"]["podCIDR"].rsplit(".", 1)[0]
        index = self._next_ip.get(node_name, 2)
        self._next_ip[node_name] = index + 1 if index < 254 else 2
        return f"{prefix}.{index}"
