"""What each API verb does to the store: the transport-free half of the twin's API server.

``dispatch`` takes a parsed route, the method, query parameters and body, and returns the status code and
body to send. It runs under ``cluster.lock`` and raises ``ApiStatusError`` for every refusal.
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver import managedfields, openapi
from orchestrator.twin.apiserver.patching import json_patch, merge_patch, strategic_merge_patch
from orchestrator.twin.apiserver.subresources import pod_log, scale_of, set_scale
from orchestrator.twin.apiserver.tables import table, wants_table
from orchestrator.twin.cluster import IMMORTAL_NAMESPACES, Cluster
from orchestrator.twin.resources import RESOURCE_TYPES, ResourceType, by_plural
from orchestrator.twin.selectors import parse_field_selector, parse_label_selector
from orchestrator.twin.store import NAMESPACES, PODS, SERVICES, Obj
from orchestrator.twin.timefmt import rfc3339
from orchestrator.twin.validation import validate, validate_update

_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


@dataclass(frozen=True)
class Route:
    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(frozen=True)
class Result:
    code: int
    body: Obj | str
    warnings: tuple[str, ...] = ()  # each sent as a ``Warning: 299 - "..."`` header


def parse_route(group: str, version: str, segments: list[str]) -> Route | None:
    """Map URL segments after the group version to (type, namespace, name, subresource); None if unknown."""
    namespace: str | None = None
    if len(segments) >= 3 and segments[0] == "namespaces":
        candidate = by_plural(group, segments[2])
        if candidate is not None and candidate.namespaced:
            namespace, segments = segments[1], segments[2:]
    rtype = by_plural(group, segments[0])
    if rtype is None or rtype.version != version or len(segments) > 3:
        return None
    if rtype.namespaced and namespace is None and len(segments) > 1:
        return None
    name = segments[1] if len(segments) > 1 else None
    sub = segments[2] if len(segments) > 2 else None
    if sub is not None and sub not in rtype.subresources:
        return None
    return Route(rtype, namespace, name, sub)


def _method_not_allowed(method: str) -> ApiStatusError:
    return ApiStatusError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})"
    )


_FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


def _field_validation(route: Route, method: str, query: dict[str, str], body: Any, media: str) -> list[str]:
    """``fieldValidation`` of a write: unknown fields are dropped from the body (a whole object or a merge
    patch), refused with the decoder's message under ``Strict``, reported as warnings under ``Warn`` (the
    default, as on a kube-apiserver), silently dropped under ``Ignore``."""
    if method not in ("POST", "PUT", "PATCH") or not isinstance(body, dict) or route.subresource == "scale":
        return []
    if media == "application/json-patch+json" or (route.subresource == "eviction"):
        return []
    mode = query.get("fieldValidation") or "Warn"
    if mode not in _FIELD_VALIDATION:
        raise ApiStatusError(
            400,
            "BadRequest",
            f'fieldValidation parameter must be one of "Ignore", "Warn", or "Strict", got "{mode}"',
        )
    unknown = [f'unknown field "{path}"' for path in openapi.drop_unknown_fields(route.rtype, body)]
    if unknown and mode == "Strict":
        kind, version = route.rtype.kind, route.rtype.version
        raise ApiStatusError(
            400,
            "BadRequest",
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            f"strict decoding error: {', '.join(unknown)}",
        )
    return unknown if mode == "Warn" else []


def dispatch(
    cluster: Cluster,
    route: Route,
    method: str,
    query: dict[str, str],
    body: Any,
    media: str,
    *,
    accept: str,
    user_agent: str = "",
) -> Result:
    warnings = _field_validation(route, method, query, body, media)
    writes = method in ("POST", "PUT") or (method == "PATCH" and media != "application/apply-patch+yaml")
    if writes and route.subresource in (None, "scale") and "dryRun" not in query:
        query = {**query, "fieldManager": managedfields.manager_of(query, user_agent)}
    result = _dispatch(cluster, route, method, query, body, media, accept=accept)
    return replace(result, warnings=tuple(warnings)) if warnings else result


def _dispatch(
    cluster: Cluster, route: Route, method: str, query: dict[str, str], body: Any, media: str, *, accept: str
) -> Result:
    if route.name is None:
        if method == "GET":
            return _list(cluster, route, query, accept)
        if method == "POST":
            created = _create(cluster, route, body, dry_run="dryRun" in query)
            if "fieldManager" in query and isinstance(created.body, dict):
                manager = query["fieldManager"]
                managedfields.update(route.rtype, None, created.body, manager=manager, now=cluster.now)
            return created
        if method == "DELETE":
            return _delete_collection(cluster, route, query)
        raise _method_not_allowed(method)
    if route.subresource == "eviction":
        if method != "POST":
            raise _method_not_allowed(method)
        return _evict(cluster, route)
    if route.subresource == "log":
        if method != "GET":
            raise _method_not_allowed(method)
        return Result(200, pod_log(cluster, route, query))
    if method == "GET":
        obj = cluster.store.get(route.rtype, route.namespace or "", route.name)
        if route.subresource == "scale":
            return Result(200, scale_of(obj))
        if wants_table(accept):
            return Result(
                200,
                table(
                    route.rtype,
                    [obj],
                    now=cluster.now,
                    resource_version=_rv(cluster),
                    include=query.get("includeObject", "Metadata"),
                ),
            )
        return Result(200, obj)
    writer = query.get("fieldManager")
    if method == "PUT":
        return _replace(cluster, route, body, dry_run="dryRun" in query, manager=writer)
    if method == "PATCH":
        if media == "application/apply-patch+yaml":
            return _apply(cluster, route, query, body, dry_run="dryRun" in query)
        return _patch(cluster, route, body, media, dry_run="dryRun" in query, manager=writer)
    if method == "DELETE":
        return _delete(cluster, route, query, body)
    raise _method_not_allowed(method)


def _rv(cluster: Cluster) -> str:
    return str(cluster.store.resource_version)


def _list(cluster: Cluster, route: Route, query: dict[str, str], accept: str) -> Result:
    rtype = route.rtype
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(query.get("fieldSelector"), kind=rtype.kind)
    namespace = route.namespace if rtype.namespaced else None
    items = cluster.store.list(rtype, namespace, labels=labels, fields=fields)
    meta: Obj = {"resourceVersion": _rv(cluster)}
    items = _page(items, query, meta)
    if wants_table(accept):
        shown = table(
            rtype,
            items,
            now=cluster.now,
            resource_version=_rv(cluster),
            include=query.get("includeObject", "Metadata"),
        )
        shown["metadata"] = meta
        return Result(200, shown)
    return Result(
        200, {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta, "items": items}
    )


def _page(items: list[Obj], query: dict[str, str], meta: Obj) -> list[Obj]:
    """``limit`` and ``continue`` as chunked lists use them: the token carries the next offset."""
    offset = 0
    if query.get("continue"):
        try:
            offset = int(json.loads(base64.urlsafe_b64decode(query["continue"].encode()))["offset"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ApiStatusError(
                400,
                "BadRequest",
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ) from exc
    limit = int(query["limit"]) if query.get("limit", "").isdigit() and int(query["limit"]) > 0 else None
    if limit is None or offset + limit >= len(items):
        return items[offset:]
    token = json.dumps({"offset": offset + limit, "rv": meta["resourceVersion"]}).encode()
    meta["continue"] = base64.urlsafe_b64encode(token).decode()
    meta["remainingItemCount"] = len(items) - offset - limit
    return items[offset : offset + limit]


def _require_object(rtype: ResourceType, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise ApiStatusError(
            400,
            "BadRequest",
            f'{rtype.kind} in version "{rtype.version}" cannot be handled '
            f"as a {rtype.kind}: the request body must be a JSON object",
        )
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if (kind is not None and kind != rtype.kind) or (
        api_version is not None and api_version != rtype.api_version
    ):
        raise ApiStatusError(
            400,
            "BadRequest",
            f"the API version in the data ({api_version}) does not match the "
            f"expected API version ({rtype.api_version})"
            if api_version != rtype.api_version
            else f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})",
        )
    return body


def _guard(rtype: ResourceType, action: Any) -> Any:
    """Shape errors deep in a body (a string where a list belongs) are a 400, as decoding fails upstream."""
    try:
        return action()
    except ApiStatusError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise ApiStatusError(
            400,
            "BadRequest",
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {exc}',
        ) from exc


def _create(cluster: Cluster, route: Route, body: Any, *, dry_run: bool) -> Result:
    obj = _require_object(route.rtype, body)
    if dry_run:
        _guard(route.rtype, lambda: validate(route.rtype, obj))
        return Result(201, obj)
    created = _guard(route.rtype, lambda: cluster.store.create(route.rtype, obj, namespace=route.namespace))
    return Result(201, created)


def _check_identity(route: Route, obj: Obj) -> None:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise ApiStatusError(400, "BadRequest", "metadata must be an object")
    if meta.get("name") not in (None, route.name):
        raise ApiStatusError(
            400,
            "BadRequest",
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({route.name})",
        )
    meta["name"] = route.name
    if route.rtype.namespaced:
        if meta.get("namespace") not in (None, route.namespace):
            raise ApiStatusError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        meta["namespace"] = route.namespace


def _write(cluster: Cluster, route: Route, obj: Obj, *, dry_run: bool, manager: str | None = None) -> Obj:
    _check_identity(route, obj)
    if route.subresource == "scale":
        return set_scale(cluster, route, obj, dry_run=dry_run, manager=manager)
    if manager is not None and route.subresource is None:
        current = cluster.store.get(route.rtype, route.namespace or "", route.name or "")
        managedfields.update(route.rtype, current, obj, manager=manager, now=cluster.now)
    if dry_run:
        old = cluster.store.get(route.rtype, route.namespace or "", route.name or "")

        def check() -> None:
            validate(route.rtype, obj)
            validate_update(route.rtype, old, obj)

        _guard(route.rtype, check)
        return _as_if_written(route, old, obj)
    sub = route.subresource or ""
    stored: Obj = _guard(route.rtype, lambda: cluster.store.replace(route.rtype, obj, subresource=sub))
    return stored


def _as_if_written(route: Route, old: Obj, obj: Obj) -> Obj:
    """A dry-run update's answer, as the write would have stored it: identity and resourceVersion kept,
    the other half of a spec/status split as it is (``kubectl diff`` compares this with the live object)."""
    shown = copy.deepcopy(obj)
    if "status" in route.rtype.subresources:
        if route.subresource == "status":
            kept = {k: copy.deepcopy(v) for k, v in old.items() if k not in ("status", "metadata")}
            shown = {**kept, "metadata": shown.get("metadata") or {}, "status": shown.get("status")}
        elif "status" in old:
            shown["status"] = copy.deepcopy(old["status"])
        else:
            shown.pop("status", None)
    meta, before = shown.setdefault("metadata", {}), old["metadata"]
    for field in ("uid", "creationTimestamp", "resourceVersion", "generation"):
        if field in before:
            meta[field] = before[field]
    if route.subresource is None and shown.get("spec") != old.get("spec") and "generation" in before:
        meta["generation"] = before["generation"] + 1
    return shown


def _replace(
    cluster: Cluster, route: Route, body: Any, *, dry_run: bool, manager: str | None = None
) -> Result:
    if route.subresource == "scale":
        if not isinstance(body, dict):
            raise ApiStatusError(400, "BadRequest", 'Scale in version "v1" cannot be handled as a Scale')
        return Result(200, _write(cluster, route, body, dry_run=dry_run, manager=manager))
    obj = _require_object(route.rtype, body)
    return Result(200, _write(cluster, route, obj, dry_run=dry_run, manager=manager))


def _patch(
    cluster: Cluster, route: Route, body: Any, media: str, *, dry_run: bool, manager: str | None = None
) -> Result:
    if media not in _PATCH_TYPES:
        raise ApiStatusError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - "
            f"accepted media types include: {', '.join(_PATCH_TYPES)}",
        )
    current = cluster.store.get(route.rtype, route.namespace or "", route.name or "")
    target = scale_of(current) if route.subresource == "scale" else current
    if body is None:
        raise ApiStatusError(400, "BadRequest", "the request body is empty")
    if media == "application/json-patch+json":
        patched = json_patch(target, body)
    elif not isinstance(body, dict):
        raise ApiStatusError(
            400, "BadRequest", "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    elif media == "application/strategic-merge-patch+json":
        if route.rtype.group == "chaos-mesh.org":
            raise ApiStatusError(
                415,
                "UnsupportedMediaType",
                "strategic merge patch is not supported for "
                "custom resources; use application/merge-patch+json",
            )
        patched = _guard(route.rtype, lambda: strategic_merge_patch(target, body))
    else:
        patched = merge_patch(target, body)
    if not isinstance(patched, dict):
        raise ApiStatusError(422, "Invalid", "the patched document is not an object")
    meta = patched.get("metadata")
    if isinstance(meta, dict) and meta.get("resourceVersion") == target["metadata"].get("resourceVersion"):
        # A patch is unconditional unless it names a resourceVersion itself.
        meta.pop("resourceVersion", None)
    return Result(200, _write(cluster, route, patched, dry_run=dry_run, manager=manager))


def _apply(cluster: Cluster, route: Route, query: dict[str, str], body: Any, *, dry_run: bool) -> Result:
    """Server-side apply: create when missing, else merge the configuration in; ``managedfields`` keeps
    who owns what, refuses another manager's fields with a 409 unless ``force``, and removes the fields
    the manager applied before and no longer applies."""
    manager = query.get("fieldManager")
    if not manager:
        raise ApiStatusError(400, "BadRequest", "PATCH /apply requests require fieldManager")
    if route.subresource is not None:
        raise _method_not_allowed("PATCH")
    obj = _require_object(route.rtype, body)
    _check_identity(route, obj)
    config = copy.deepcopy(obj)
    force = query.get("force") in ("true", "1")
    rtype = route.rtype
    current = cluster.store.find(rtype, route.namespace or "", route.name or "")
    if current is None:
        created = _create(cluster, Route(rtype, route.namespace, None, None), obj, dry_run=dry_run)
        if isinstance(created.body, dict):
            managedfields.apply(
                rtype, None, config, created.body, manager=manager, force=force, now=cluster.now
            )
        return created
    if rtype.group == "chaos-mesh.org":
        merged = merge_patch(current, obj)
    else:
        merged = _guard(rtype, lambda: strategic_merge_patch(current, obj))
    managedfields.apply(rtype, current, config, merged, manager=manager, force=force, now=cluster.now)
    meta = merged.get("metadata")
    if isinstance(meta, dict) and meta.get("resourceVersion") == current["metadata"].get("resourceVersion"):
        meta.pop("resourceVersion", None)
    return Result(200, _write(cluster, route, merged, dry_run=dry_run))


def _evict(cluster: Cluster, route: Route) -> Result:
    """``kubectl drain`` evicts through this; no PodDisruptionBudgets exist, so every eviction is allowed."""
    pod = cluster.store.get(PODS, route.namespace or "", route.name or "")
    cluster.kubelet.delete_pod(pod, cluster.now, immediately=True)
    return Result(
        201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    )


def _success(route: Route, obj: Obj) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            k: v
            for k, v in (
                ("name", obj["metadata"]["name"]),
                ("group", route.rtype.group),  # omitted for the core group, as upstream (omitempty)
                ("kind", route.rtype.plural),
                ("uid", obj["metadata"].get("uid")),
            )
            if v
        },
    }


def _delete(cluster: Cluster, route: Route, query: dict[str, str], body: Any) -> Result:
    rtype, namespace, name = route.rtype, route.namespace or "", route.name or ""
    if route.subresource is not None:
        raise _method_not_allowed("DELETE")
    current = cluster.store.get(rtype, namespace, name)
    preconditions = (body or {}).get("preconditions") if isinstance(body, dict) else None
    if preconditions and preconditions.get("uid") not in (None, current["metadata"].get("uid")):
        raise ApiStatusError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {preconditions['uid']}, "
            f"UID in object meta: {current['metadata'].get('uid')}",
        )
    if "dryRun" in query:
        return Result(200, current)
    if rtype is PODS:
        # The pod is gone at once: a frozen (stepped) world must not leave `kubectl delete` waiting.
        cluster.kubelet.delete_pod(current, cluster.now, immediately=True)
        grace = int(current["spec"].get("terminationGracePeriodSeconds", 30))
        meta = {
            **current["metadata"],
            "deletionTimestamp": rfc3339(cluster.now + grace),
            "deletionGracePeriodSeconds": grace,
        }
        return Result(200, {**current, "metadata": meta})
    if rtype is NAMESPACES:
        if name in IMMORTAL_NAMESPACES:
            raise ApiStatusError(
                403,
                "Forbidden",
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                details={"name": name, "kind": "namespaces"},
            )
        for other in [r for r in RESOURCE_TYPES if r.namespaced]:
            for obj in cluster.store.list(other, name):
                if other is PODS:
                    cluster.kubelet.delete_pod(obj, cluster.now, immediately=True)
                else:
                    cluster.store.delete(other, name, obj["metadata"]["name"])
    gone = cluster.store.delete(rtype, namespace, name)
    if rtype.group == "chaos-mesh.org" or rtype is SERVICES:
        # Registries that return the deleted object (custom resources, Services) rather than a Status.
        return Result(200, gone)
    return Result(200, _success(route, gone))


def _delete_collection(cluster: Cluster, route: Route, query: dict[str, str]) -> Result:
    rtype = route.rtype
    if "deletecollection" not in rtype.verbs:
        raise _method_not_allowed("DELETE")
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(query.get("fieldSelector"), kind=rtype.kind)
    namespace = route.namespace if rtype.namespaced else None
    for obj in cluster.store.list(rtype, namespace, labels=labels, fields=fields):
        meta = obj["metadata"]
        if rtype is PODS:
            cluster.kubelet.delete_pod(obj, cluster.now, immediately=True)
        else:
            cluster.store.delete(rtype, meta.get("namespace", ""), meta["name"])
    return Result(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
