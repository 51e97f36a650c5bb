"""Endpoints from pods, and Chaos Mesh experiment status: the two derived-object controllers."""

from __future__ import annotations

from typing import Any

from orchestrator.twin.replicasets import pod_ready
from orchestrator.twin.resources import CHAOS_GROUP, RESOURCE_TYPES
from orchestrator.twin.selectors import labels_match, selector_from_match
from orchestrator.twin.store import ENDPOINTS, PODS, SERVICES, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339, rfc3339
from orchestrator.twin.workloads import object_key

CHAOS_TYPES = tuple(r for r in RESOURCE_TYPES if r.group == CHAOS_GROUP)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _target_port(port: Obj, pods: list[Obj]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for pod in pods:
        for container in pod["spec"].get("containers") or []:
            for declared in container.get("ports") or []:
                if declared.get("name") == target:
                    return int(declared["containerPort"])
    return None


def _address(pod: Obj) -> Obj:
    meta = pod["metadata"]
    return {
        "ip": pod["status"]["podIP"],
        "nodeName": pod["spec"].get("nodeName"),
        "targetRef": {
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        },
    }


class EndpointsController:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._synced = -1

    def sync(self, now: float) -> None:
        if not self.store.changed_since(self._synced, PODS, SERVICES, ENDPOINTS):
            return
        by_namespace: dict[str, list[Obj]] = {}
        for pod in self.store.values(PODS):
            if (pod.get("status") or {}).get("podIP") and not pod["metadata"].get("deletionTimestamp"):
                by_namespace.setdefault(pod["metadata"]["namespace"], []).append(pod)
        for service in sorted(self.store.values(SERVICES), key=object_key):
            selector = (service.get("spec") or {}).get("selector")
            if not selector:
                continue  # endpoints of a selector-less service are written by hand
            namespace = service["metadata"]["namespace"]
            requirements = selector_from_match({"matchLabels": selector})
            pods = sorted(
                (
                    p
                    for p in by_namespace.get(namespace, [])
                    if labels_match(requirements, p["metadata"].get("labels"))
                ),
                key=lambda p: tuple(int(x) for x in p["status"]["podIP"].split(".")),
            )
            self._write(service, pods, now)
        self._synced = self.store.resource_version

    def _write(self, service: Obj, pods: list[Obj], now: float) -> None:
        meta = service["metadata"]
        publish_all = bool(service["spec"].get("publishNotReadyAddresses"))
        ready = [_address(p) for p in pods if publish_all or pod_ready(p)]
        not_ready = [_address(p) for p in pods if not publish_all and not pod_ready(p)]
        ports = []
        for port in service["spec"].get("ports") or []:
            number = _target_port(port, pods)
            if number is not None:
                entry: Obj = {"port": number, "protocol": port.get("protocol", "TCP")}
                if port.get("name"):
                    entry["name"] = port["name"]
                ports.append(entry)
        subsets: list[Obj] = []
        if (ready or not_ready) and ports:
            subset: Obj = {"ports": ports}
            if ready:
                subset["addresses"] = ready
            if not_ready:
                subset["notReadyAddresses"] = not_ready
            subsets.append(subset)
        existing = self.store.find(ENDPOINTS, meta["namespace"], meta["name"])
        labels = dict(meta.get("labels") or {})
        if existing is None:
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": rfc3339(now)},
                },
            }
            if subsets:
                body["subsets"] = subsets
            self.store.create(ENDPOINTS, body)
            return
        if (existing.get("subsets") or []) == subsets and (
            existing["metadata"].get("labels") or {}
        ) == labels:
            return
        annotations = {
            **(existing["metadata"].get("annotations") or {}),
            "endpoints.kubernetes.io/last-change-trigger-time": rfc3339(now),
        }
        updated: Obj = {k: v for k, v in existing.items() if k != "subsets"}
        updated["metadata"] = {**existing["metadata"], "labels": labels, "annotations": annotations}
        if subsets:
            updated["subsets"] = subsets
        self.store.put(ENDPOINTS, updated)


def duration_seconds(text: Any) -> float | None:
    """A Go duration (``30s``, ``5m``, ``1h30m``, ``500ms``) in seconds; None when absent or malformed."""
    if not isinstance(text, str) or not text:
        return None
    total, number = 0.0, ""
    index = 0
    while index < len(text):
        char = text[index]
        if char.isdigit() or char == ".":
            number += char
            index += 1
            continue
        unit = "ms" if text.startswith("ms", index) else char
        if unit not in _DURATION_UNITS or not number:
            return None
        total += float(number) * _DURATION_UNITS[unit]
        number = ""
        index += len(unit)
    return total if not number else None


class ChaosStatusController:
    """Writes the status Chaos Mesh reports, so clients can wait for an experiment to be in place.

    Which pods an experiment affects, and how, is the application model's business; this controller only
    says whether the selector matches any pod and whether the experiment runs or has ended.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def sync(self, now: float) -> None:
        for rtype in CHAOS_TYPES:
            for chaos in sorted(self.store.values(rtype), key=object_key):
                status = self._status(chaos, now)
                if status != chaos.get("status"):
                    self.store.put(rtype, {**chaos, "status": status})

    def _status(self, chaos: Obj, now: float) -> Obj:
        spec = chaos.get("spec") or {}
        selector = spec.get("selector") or {}
        namespaces = selector.get("namespaces") or [chaos["metadata"]["namespace"]]
        requirements = selector_from_match(
            {
                "matchLabels": selector.get("labelSelectors") or {},
                "matchExpressions": selector.get("expressionSelectors") or [],
            }
        )
        if selector.get("pods"):
            listed = {(ns, name) for ns, names in selector["pods"].items() for name in names}
            matched = [p for p in self.store.values(PODS) if object_key(p) in listed]
        else:
            matched = [p for ns in namespaces for p in self.store.list(PODS, ns, labels=requirements)]
        created = parse_rfc3339(chaos["metadata"]["creationTimestamp"])
        length = duration_seconds(spec.get("duration"))
        paused = (chaos["metadata"].get("annotations") or {}).get("experiment.chaos-mesh.org/pause") == "true"
        running = not paused and (length is None or now < created + length)
        flags = {
            "Selected": bool(matched),
            "AllInjected": running and bool(matched),
            "AllRecovered": not running,
            "Paused": paused,
        }
        conditions = []
        for kind, value in flags.items():
            text = "True" if value else "False"
            conditions.append({"type": kind, "status": text})
        return {
            "conditions": conditions,
            "experiment": {"desiredPhase": "Run" if running else "Stop"},
        }
