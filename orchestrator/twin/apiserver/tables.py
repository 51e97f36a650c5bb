"""Server-side printing: the ``meta.k8s.io/v1`` Table that ``kubectl get`` asks for, per kind.

Ages are computed from simulated time, so ``kubectl get`` against the twin shows the twin's clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.twin.resources import ResourceType
from orchestrator.twin.timefmt import parse_rfc3339
from orchestrator.vocabulary.chaos import CHAOS_GROUP

Obj = dict[str, Any]
Column = tuple[str, str, int]  # name, type, priority (1 = only with -o wide)


def human_duration(seconds: float) -> str:
    """kubectl's age format: 45s, 5m30s, 3h, 2d4h, 400d ..."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    return f"{hours // 24}d"


def _age(obj: Obj, now: float) -> str:
    created = obj["metadata"].get("creationTimestamp")
    return human_duration(now - parse_rfc3339(created)) if created else "<unknown>"


def pod_status_reason(pod: Obj) -> str:
    """The STATUS column of ``kubectl get pods``, following the upstream printer's precedence."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            code = state["terminated"].get("exitCode", 0)
            reason = f"ExitCode:{code}"
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _restarts(pod: Obj, now: float) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = sum(int(c.get("restartCount", 0)) for c in statuses)
    finished = [
        parse_rfc3339(c["lastState"]["terminated"]["finishedAt"])
        for c in statuses
        if (c.get("lastState") or {}).get("terminated", {}).get("finishedAt")
    ]
    if total and finished:
        return f"{total} ({human_duration(now - max(finished))} ago)"
    return str(total)


def _pod_row(pod: Obj, now: float) -> list[Any]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    containers = pod["spec"].get("containers") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(containers)}",
        pod_status_reason(pod),
        _restarts(pod, now),
        _age(pod, now),
        status.get("podIP") or "<none>",
        pod["spec"].get("nodeName") or "<none>",
        "<none>",
        "<none>",
    ]


def _images(template_spec: Obj) -> tuple[str, str]:
    containers = template_spec.get("containers") or []
    return ",".join(c["name"] for c in containers), ",".join(c.get("image", "") for c in containers)


def _selector(spec: Obj) -> str:
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _deployment_row(d: Obj, now: float) -> list[Any]:
    status = d.get("status") or {}
    names, images = _images(d["spec"]["template"].get("spec") or {})
    return [
        d["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{d['spec'].get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(d, now),
        names,
        images,
        _selector(d["spec"]),
    ]


def _statefulset_row(sts: Obj, now: float) -> list[Any]:
    status = sts.get("status") or {}
    names, images = _images(sts["spec"]["template"].get("spec") or {})
    ready = f"{status.get('readyReplicas', 0)}/{sts['spec'].get('replicas', 1)}"
    return [sts["metadata"]["name"], ready, _age(sts, now), names, images]


def _job_row(job: Obj, now: float) -> list[Any]:
    spec, status = job["spec"], job.get("status") or {}
    ended = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    running = "Suspended" if spec.get("suspend") else "Running"
    state = next((s for s in ("Complete", "Failed") if s in ended), running)
    completions = spec.get("completions")
    start, end = status.get("startTime"), status.get("completionTime")
    duration = human_duration((parse_rfc3339(end) if end else now) - parse_rfc3339(start)) if start else ""
    names, images = _images(spec["template"].get("spec") or {})
    done = f"{status.get('succeeded', 0)}/{completions if completions is not None else 1}"
    return [job["metadata"]["name"], state, done, duration, _age(job, now), names, images, _selector(spec)]


def _replicaset_row(rs: Obj, now: float) -> list[Any]:
    status = rs.get("status") or {}
    names, images = _images(rs["spec"]["template"].get("spec") or {})
    return [
        rs["metadata"]["name"],
        rs["spec"].get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(rs, now),
        names,
        images,
        _selector(rs["spec"]),
    ]


def _service_row(svc: Obj, now: float) -> list[Any]:
    spec = svc.get("spec") or {}
    ports = ",".join(
        f"{p['port']}/{p.get('protocol', 'TCP')}"
        if "nodePort" not in p
        else f"{p['port']}:{p['nodePort']}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or []
    )
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [
        svc["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP", "<none>"),
        "<none>",
        ports or "<none>",
        _age(svc, now),
        selector,
    ]


def _endpoints_row(ep: Obj, now: float) -> list[Any]:
    pairs = [
        f"{a['ip']}:{p['port']}"
        for subset in ep.get("subsets") or []
        for a in subset.get("addresses") or []
        for p in subset.get("ports") or []
    ]
    shown = ",".join(pairs[:3]) + (f" + {len(pairs) - 3} more..." if len(pairs) > 3 else "")
    return [ep["metadata"]["name"], shown or "<none>", _age(ep, now)]


def _node_row(node: Obj, now: float) -> list[Any]:
    status = node.get("status") or {}
    ready: Obj = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    info = status.get("nodeInfo") or {}
    internal = next(
        (a["address"] for a in status.get("addresses") or [] if a["type"] == "InternalIP"), "<none>"
    )
    shown = "Ready" if ready.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        shown += ",SchedulingDisabled"
    return [
        node["metadata"]["name"],
        shown,
        "<none>",
        _age(node, now),
        info.get("kubeletVersion", ""),
        internal,
        "<none>",
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


def _event_row(ev: Obj, now: float) -> list[Any]:
    last = ev.get("lastTimestamp") or ev.get("firstTimestamp")
    seen = human_duration(now - parse_rfc3339(last)) if last else "<unknown>"
    involved = ev.get("involvedObject") or {}
    source = (ev.get("source") or {}).get("component", "")
    first = ev.get("firstTimestamp")
    return [
        seen,
        ev.get("type", ""),
        ev.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        ev.get("message", ""),
        involved.get("fieldPath", ""),
        source,
        human_duration(now - parse_rfc3339(first)) if first else "<unknown>",
        ev.get("count", 1),
        ev["metadata"]["name"],
    ]


def _chaos_row(obj: Obj, now: float) -> list[Any]:
    spec = obj.get("spec") or {}
    return [obj["metadata"]["name"], spec.get("action", ""), spec.get("duration", ""), _age(obj, now)]


_S, _I = "string", "integer"
TABLES: dict[str, tuple[tuple[Column, ...], Callable[[Obj, float], list[Any]]]] = {
    "Pod": (
        (
            ("Name", _S, 0),
            ("Ready", _S, 0),
            ("Status", _S, 0),
            ("Restarts", _S, 0),
            ("Age", _S, 0),
            ("IP", _S, 1),
            ("Node", _S, 1),
            ("Nominated Node", _S, 1),
            ("Readiness Gates", _S, 1),
        ),
        _pod_row,
    ),
    "Deployment": (
        (
            ("Name", _S, 0),
            ("Ready", _S, 0),
            ("Up-to-date", _I, 0),
            ("Available", _I, 0),
            ("Age", _S, 0),
            ("Containers", _S, 1),
            ("Images", _S, 1),
            ("Selector", _S, 1),
        ),
        _deployment_row,
    ),
    "StatefulSet": (
        (("Name", _S, 0), ("Ready", _S, 0), ("Age", _S, 0), ("Containers", _S, 1), ("Images", _S, 1)),
        _statefulset_row,
    ),
    "ReplicaSet": (
        (
            ("Name", _S, 0),
            ("Desired", _I, 0),
            ("Current", _I, 0),
            ("Ready", _I, 0),
            ("Age", _S, 0),
            ("Containers", _S, 1),
            ("Images", _S, 1),
            ("Selector", _S, 1),
        ),
        _replicaset_row,
    ),
    "Job": (
        (
            ("Name", _S, 0),
            ("Status", _S, 0),
            ("Completions", _S, 0),
            ("Duration", _S, 0),
            ("Age", _S, 0),
            ("Containers", _S, 1),
            ("Images", _S, 1),
            ("Selector", _S, 1),
        ),
        _job_row,
    ),
    "Service": (
        (
            ("Name", _S, 0),
            ("Type", _S, 0),
            ("Cluster-IP", _S, 0),
            ("External-IP", _S, 0),
            ("Port(s)", _S, 0),
            ("Age", _S, 0),
            ("Selector", _S, 1),
        ),
        _service_row,
    ),
    "Endpoints": ((("Name", _S, 0), ("Endpoints", _S, 0), ("Age", _S, 0)), _endpoints_row),
    "Node": (
        (
            ("Name", _S, 0),
            ("Status", _S, 0),
            ("Roles", _S, 0),
            ("Age", _S, 0),
            ("Version", _S, 0),
            ("Internal-IP", _S, 1),
            ("External-IP", _S, 1),
            ("OS-Image", _S, 1),
            ("Kernel-Version", _S, 1),
            ("Container-Runtime", _S, 1),
        ),
        _node_row,
    ),
    "Event": (
        (
            ("Last Seen", _S, 0),
            ("Type", _S, 0),
            ("Reason", _S, 0),
            ("Object", _S, 0),
            ("Message", _S, 0),
            ("Subobject", _S, 1),
            ("Source", _S, 1),
            ("First Seen", _S, 1),
            ("Count", _I, 1),
            ("Name", _S, 1),
        ),
        _event_row,
    ),
    "Namespace": (
        (("Name", _S, 0), ("Status", _S, 0), ("Age", _S, 0)),
        lambda o, now: [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"), _age(o, now)],
    ),
    "ConfigMap": (
        (("Name", _S, 0), ("Data", _I, 0), ("Age", _S, 0)),
        lambda o, now: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            _age(o, now),
        ],
    ),
    "Secret": (
        (("Name", _S, 0), ("Type", _S, 0), ("Data", _I, 0), ("Age", _S, 0)),
        lambda o, now: [
            o["metadata"]["name"],
            o.get("type", "Opaque"),
            len(o.get("data") or {}),
            _age(o, now),
        ],
    ),
}
_CHAOS_TABLE = ((("Name", _S, 0), ("Action", _S, 0), ("Duration", _S, 0), ("Age", _S, 0)), _chaos_row)
_DEFAULT_TABLE: tuple[tuple[Column, ...], Callable[[Obj, float], list[Any]]] = (
    (("Name", _S, 0), ("Age", _S, 0)),
    lambda o, now: [o["metadata"]["name"], _age(o, now)],
)


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def table(
    rtype: ResourceType,
    objects: list[Obj],
    *,
    now: float,
    resource_version: str,
    include: str = "Metadata",
    columns_too: bool = True,
) -> Obj:
    """A ``Table`` of ``objects`` as the API server prints them; ``include`` is ``includeObject``
    (Metadata, Object or None), ``columns_too=False`` leaves out the columns as later watch events do."""
    if rtype.kind in TABLES:
        columns, row = TABLES[rtype.kind]
    elif rtype.group == CHAOS_GROUP:
        columns, row = _CHAOS_TABLE
    else:
        columns, row = _DEFAULT_TABLE
    rows: list[Obj] = []
    for obj in objects:
        entry: Obj = {"cells": row(obj, now)}
        if include == "Object":
            entry["object"] = obj
        elif include != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(entry)
    definitions = [
        {
            "name": name,
            "type": kind,
            "format": "name" if name == "Name" else "",
            "description": name,
            "priority": priority,
        }
        for name, kind, priority in columns
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions if columns_too else [],
        "rows": rows,
    }
