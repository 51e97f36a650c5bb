"""The subresources with their own shapes: ``scale`` (autoscaling/v1 Scale) and ``pods/log`` (text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver import managedfields
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.resources import ResourceType
from orchestrator.twin.store import PODS, Obj, conflict
from orchestrator.twin.timefmt import parse_rfc3339
from orchestrator.twin.validation import Cause, invalid, raise_invalid

if TYPE_CHECKING:
    from orchestrator.twin.apiserver.handlers import Route


def scale_of(obj: Obj) -> Obj:
    selector = obj["spec"].get("selector") or {}
    if obj.get("kind") != "ReplicationController":  # the one kind whose selector is a plain label map
        selector = selector.get("matchLabels") or {}
    meta = obj["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj["spec"].get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }


def set_scale(
    cluster: Cluster, route: Route, scale: Obj, *, dry_run: bool, manager: str | None = None
) -> Obj:
    """Write ``spec.replicas`` through the scale subresource; ``manager`` takes its ownership."""
    current = cluster.store.get(route.rtype, route.namespace or "", route.name or "")
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise ApiStatusError(
            400,
            "BadRequest",
            f'Scale in version "v1" cannot be handled as a Scale: json: '
            f"cannot unmarshal {type(replicas).__name__} into Go struct field "
            "ScaleSpec.spec.replicas of type int32",
        )
    causes: list[Cause] = []
    if replicas < 0:
        causes.append(invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    scale_type = ResourceType("autoscaling", "v1", "Scale", "scale")
    raise_invalid(scale_type, route.name or "", causes)
    given = (scale.get("metadata") or {}).get("resourceVersion")
    if given and given != current["metadata"]["resourceVersion"]:
        raise conflict(route.rtype, route.name or "")
    if dry_run:
        return {**scale_of(current), "spec": {"replicas": replicas}}
    updated = {
        **current,
        "spec": {**current["spec"], "replicas": replicas},
        "metadata": {k: v for k, v in current["metadata"].items() if k != "resourceVersion"},
    }
    if manager is not None:
        managedfields.update(
            route.rtype, current, updated, manager=manager, now=cluster.now, subresource="scale"
        )
    return scale_of(cluster.store.replace(route.rtype, updated))


def pod_log(cluster: Cluster, route: Route, query: dict[str, str]) -> str:
    pod = cluster.store.get(PODS, route.namespace or "", route.name or "")
    containers = [c["name"] for c in pod["spec"].get("containers") or []]
    container = query.get("container")
    if not container:
        if len(containers) != 1:
            raise ApiStatusError(
                400,
                "BadRequest",
                f"a container name must be specified for pod "
                f"{route.name}, choose one of: [{' '.join(containers)}]",
            )
        container = containers[0]
    if container not in containers:
        raise ApiStatusError(400, "BadRequest", f"container {container} is not valid for pod {route.name}")
    previous = query.get("previous") in ("true", "1")
    since: float | None = None
    if query.get("sinceSeconds"):
        since = cluster.now - _positive(query["sinceSeconds"], "sinceSeconds", minimum=1)
    elif query.get("sinceTime"):
        since = parse_rfc3339(query["sinceTime"])
    tail = int(_positive(query["tailLines"], "tailLines")) if query.get("tailLines") else None
    text = cluster.logbook.render(
        namespace=route.namespace or "",
        pod=route.name or "",
        container=container,
        previous=previous,
        since=since,
        tail_lines=tail,
        timestamps=query.get("timestamps") in ("true", "1"),
    )
    if text is None:
        if previous:
            raise ApiStatusError(
                400,
                "BadRequest",
                f'previous terminated container "{container}" in pod "{route.name}" not found',
            )
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        state = next((s.get("state") for s in statuses if s.get("name") == container), None) or {}
        reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise ApiStatusError(
            400, "BadRequest", f'container "{container}" in pod "{route.name}" is waiting to start: {reason}'
        )
    return text


def _positive(value: str, name: str, *, minimum: int = 0) -> float:
    try:
        number = float(value)
    except ValueError as exc:
        raise ApiStatusError(400, "BadRequest", f"{name}: invalid value {value!r}") from exc
    if number < minimum:
        bound = "greater than 0" if minimum == 1 else "greater than or equal to 0"
        raise ApiStatusError(
            422, "Invalid", f'PodLogOptions "" is invalid: {name}: Invalid value: {value}: must be {bound}'
        )
    return number
