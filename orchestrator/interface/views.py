"""Compact views of Kubernetes objects, as ``kubectl get`` and ``kubectl describe`` would show them.

Pure functions over JSON objects (no side effects). Annotations and labels that only the fault tooling
writes are dropped, so a view never reveals how a change came about.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from orchestrator.cluster.fields import CHANGE_CAUSE

Json = dict[str, Any]
Age = Callable[[str | None], float | None]

REVISION = "deployment.kubernetes.io/revision"
_TOOLING_PREFIXES = ("chaos-mesh.org/", "marathon/", "marathon.")
MAX_LIST = 100
MAX_TEXT = 2000


def truncate(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def _clean(mapping: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (mapping or {}).items() if not k.startswith(_TOOLING_PREFIXES)}


def images(template_spec: Json) -> list[str]:
    return [str(c.get("image", "")) for c in template_spec.get("containers", [])]


def pod_view(pod: Json, age: Age) -> Json:
    status = pod.get("status", {})
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    total = len(pod.get("spec", {}).get("containers", [])) or len(statuses)
    reason = status.get("reason") or status.get("phase", "Unknown")
    last_reasons = []
    for container in statuses:
        state = container.get("state", {})
        if "waiting" in state:
            reason = state["waiting"].get("reason", reason)
        elif "terminated" in state:
            reason = state["terminated"].get("reason", reason)
        terminated = container.get("lastState", {}).get("terminated")
        if terminated:
            last_reasons.append(terminated.get("reason", ""))
    view: Json = {
        "name": pod["metadata"]["name"],
        "status": reason,
        "ready": f"{ready}/{total}",
        "restarts": sum(int(c.get("restartCount", 0)) for c in statuses),
        "node": pod.get("spec", {}).get("nodeName"),
        "images": images(pod.get("spec", {})),
        "age_s": age(pod["metadata"].get("creationTimestamp")),
    }
    if last_reasons:
        view["last_terminated"] = last_reasons
    return view


def deployment_view(deployment: Json, age: Age) -> Json:
    spec, status, meta = deployment.get("spec", {}), deployment.get("status", {}), deployment["metadata"]
    annotations = meta.get("annotations") or {}
    problems = [
        f"{c.get('type')}: {c.get('reason', '')} {c.get('message', '')}".strip()
        for c in status.get("conditions", [])
        if c.get("status") != "True"
    ]
    view: Json = {
        "name": meta["name"],
        "replicas": spec.get("replicas", 1),
        "ready": status.get("readyReplicas", 0),
        "updated": status.get("updatedReplicas", 0),
        "available": status.get("availableReplicas", 0),
        "images": images(spec.get("template", {}).get("spec", {})),
        "revision": annotations.get(REVISION),
        "change_cause": annotations.get(CHANGE_CAUSE),
        "age_s": age(meta.get("creationTimestamp")),
    }
    if problems:
        view["conditions"] = problems
    return view


def replicaset_view(rs: Json, age: Age) -> Json:
    meta, spec, status = rs["metadata"], rs.get("spec", {}), rs.get("status", {})
    owners = [o.get("name") for o in meta.get("ownerReferences", []) if o.get("kind") == "Deployment"]
    return {
        "name": meta["name"],
        "deployment": owners[0] if owners else None,
        "revision": (meta.get("annotations") or {}).get(REVISION),
        "replicas": spec.get("replicas", 0),
        "ready": status.get("readyReplicas", 0),
        "images": images(spec.get("template", {}).get("spec", {})),
        "change_cause": (meta.get("annotations") or {}).get(CHANGE_CAUSE),
        "age_s": age(meta.get("creationTimestamp")),
    }


def controller_revision_view(revision: Json, age: Age) -> Json:
    """A StatefulSet's revision in the shape of a ReplicaSet's: its number, images and change cause."""
    meta = revision["metadata"]
    owners = [o.get("name") for o in meta.get("ownerReferences", []) if o.get("kind") == "StatefulSet"]
    template = (revision.get("data") or {}).get("spec", {}).get("template", {})
    return {
        "name": meta["name"],
        "statefulset": owners[0] if owners else None,
        "revision": str(revision.get("revision", "")),
        "images": images(template.get("spec", {})),
        "change_cause": (meta.get("annotations") or {}).get(CHANGE_CAUSE),
        "age_s": age(meta.get("creationTimestamp")),
    }


def _port(port: Json) -> str:
    target = port.get("targetPort", port.get("port"))
    return f"{port.get('name', '')}:{port.get('port')}->{target}/{port.get('protocol') or 'TCP'}"


def service_view(service: Json, age: Age) -> Json:
    spec = service.get("spec", {})
    ports = [_port(p) for p in spec.get("ports", [])]
    return {
        "name": service["metadata"]["name"],
        "type": spec.get("type", "ClusterIP"),
        "cluster_ip": spec.get("clusterIP"),
        "ports": ports,
        "selector": spec.get("selector") or {},
        "age_s": age(service["metadata"].get("creationTimestamp")),
    }


def endpoints_view(endpoints: Json, age: Age) -> Json:
    ready: list[str] = []
    not_ready: list[str] = []
    for subset in endpoints.get("subsets") or []:
        ports = [str(p.get("port")) for p in subset.get("ports", [])]
        suffix = f":{','.join(ports)}" if ports else ""
        for address in subset.get("addresses") or []:
            ready.append(f"{(address.get('targetRef') or {}).get('name', address.get('ip'))}{suffix}")
        for address in subset.get("notReadyAddresses") or []:
            not_ready.append(f"{(address.get('targetRef') or {}).get('name', address.get('ip'))}{suffix}")
    return {
        "name": endpoints["metadata"]["name"],
        "ready": ready,
        "not_ready": not_ready,
        "age_s": age(endpoints["metadata"].get("creationTimestamp")),
    }


def configmap_view(configmap: Json, age: Age) -> Json:
    data = configmap.get("data") or {}
    return {
        "name": configmap["metadata"]["name"],
        "keys": {key: f"{len(value)} bytes" for key, value in sorted(data.items())},
        "age_s": age(configmap["metadata"].get("creationTimestamp")),
    }


def node_view(node: Json, age: Age) -> Json:
    conditions = {c.get("type"): c.get("status") for c in node.get("status", {}).get("conditions", [])}
    labels = node["metadata"].get("labels") or {}
    return {
        "name": node["metadata"]["name"],
        "ready": conditions.get("Ready") == "True",
        "pressure": sorted(t for t, s in conditions.items() if t != "Ready" and s == "True"),
        "unschedulable": bool(node.get("spec", {}).get("unschedulable", False)),
        "taints": [f"{t.get('key')}:{t.get('effect')}" for t in node.get("spec", {}).get("taints") or []],
        "zone": labels.get("topology.kubernetes.io/zone"),
        "age_s": age(node["metadata"].get("creationTimestamp")),
    }


def namespace_view(namespace: Json, age: Age) -> Json:
    return {
        "name": namespace["metadata"]["name"],
        "phase": namespace.get("status", {}).get("phase", "Active"),
        "age_s": age(namespace["metadata"].get("creationTimestamp")),
    }


VIEWS: dict[str, tuple[str, Callable[[Json, Age], Json]]] = {
    "pods": ("Pod", pod_view),
    "deployments": ("Deployment", deployment_view),
    "statefulsets": ("StatefulSet", deployment_view),  # the same counts, and no revision annotation
    "replicasets": ("ReplicaSet", replicaset_view),
    "services": ("Service", service_view),
    "endpoints": ("Endpoints", endpoints_view),
    "configmaps": ("ConfigMap", configmap_view),
    "nodes": ("Node", node_view),
    "namespaces": ("Namespace", namespace_view),
}


def described(obj: Json) -> Json:
    """The object as ``describe`` shows it: bookkeeping fields dropped, tooling marks removed."""
    obj = copy.deepcopy(obj)
    meta = dict(obj.get("metadata", {}))
    for key in ("managedFields", "uid", "resourceVersion", "generation", "selfLink"):
        meta.pop(key, None)
    meta["labels"] = _clean(meta.get("labels"))
    meta["annotations"] = _clean(meta.get("annotations"))
    result = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion")}
    result["metadata"] = {k: v for k, v in meta.items() if v not in ({}, None)}
    template = result.get("spec", {}).get("template", {}) if isinstance(result.get("spec"), dict) else {}
    if isinstance(template, dict) and "metadata" in template:
        template_meta = dict(template["metadata"])
        template_meta["labels"] = _clean(template_meta.get("labels"))
        template_meta["annotations"] = _clean(template_meta.get("annotations"))
        template["metadata"] = template_meta
    return result


def compact(value: Any, *, depth: int = 0) -> Any:
    """``value`` with long strings cut and long lists shortened, each cut saying what was left out."""
    if isinstance(value, str):
        return truncate(value)
    if isinstance(value, list):
        items = [compact(v, depth=depth + 1) for v in value[:MAX_LIST]]
        if len(value) > MAX_LIST:
            items.append(f"... {len(value) - MAX_LIST} more items")
        return items
    if isinstance(value, dict):
        return {str(k): compact(v, depth=depth + 1) for k, v in value.items()}
    return value
