"""Field ownership, as server-side apply keeps it in ``metadata.managedFields``.

Every write through the API names a manager (``?fieldManager=``, else the client's user agent, as the API
server derives it). A write that is not an apply (``Update``) takes the fields it changes away from every
other manager; an apply (``Apply``) owns the fields of its configuration, and fails with a 409 when another
manager owns one it would change, unless forced; the fields a manager applied before and no longer applies
are removed, unless someone else owns them too. Ownership is by leaf: a scalar, an atomic list, or an item
of a list keyed by its merge keys (``containers[name="server"]``), which the official schemas name.

The fields are written in the FieldsV1 form (``{"f:spec": {"f:replicas": {}}}``) with the twin's time, so
the same writes give the same managedFields.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver import openapi
from orchestrator.twin.resources import ResourceType
from orchestrator.twin.timefmt import rfc3339

Path = tuple[str, ...]  # FieldsV1 steps: "f:spec", 'k:{"name":"server"}'
_UNOWNED_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                 "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")  # fmt: skip


def _schema(rtype: ResourceType) -> dict[str, Any]:
    name = openapi.definition_name(rtype)
    return openapi.definitions().get(name, {}) if name else {}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = openapi.definitions().get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _list_keys(schema: dict[str, Any]) -> list[str]:
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        return list(keys)
    merge = schema.get("x-kubernetes-patch-merge-key")
    return [merge] if merge and schema.get("x-kubernetes-patch-strategy", "").startswith("merge") else []


def _item_key(item: dict[str, Any], keys: list[str]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in keys}, separators=(",", ":"))


def leaves(rtype: ResourceType, obj: Any) -> dict[Path, Any]:
    """The owned leaves of ``obj`` with their values; status and identity are nobody's."""
    found: dict[Path, Any] = {}
    schema = _schema(rtype)
    if not isinstance(obj, dict):
        return found
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        child = _resolve(schema.get("properties", {}).get(key, {}))
        if key == "metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in _UNOWNED_META}
        _walk(child, value, (f"f:{key}",), found)
    return found


def _walk(schema: dict[str, Any], value: Any, path: Path, found: dict[Path, Any]) -> None:
    schema = _resolve(schema)
    if isinstance(value, dict) and value and "oneOf" not in schema:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key) or (extra if isinstance(extra, dict) else {})
            _walk(child, item, (*path, f"f:{key}"), found)
        return
    items = _resolve(schema.get("items", {})) if isinstance(schema.get("items"), dict) else {}
    keys = _list_keys(schema)
    if isinstance(value, list) and keys and all(isinstance(i, dict) for i in value):
        for item in value:
            _walk(items, item, (*path, _item_key(item, keys)), found)
        return
    found[path] = value


def _value_at(obj: Any, path: Path) -> Any:
    node = obj
    for step in path:
        if step.startswith("f:") and isinstance(node, dict):
            node = node.get(step[2:], _ABSENT)
        elif step.startswith("k:") and isinstance(node, list):
            wanted = json.loads(step[2:])
            node = next((i for i in node if {k: i.get(k) for k in wanted} == wanted), _ABSENT)
        else:
            return _ABSENT
        if node is _ABSENT:
            return _ABSENT
    return node


def _remove_at(obj: Any, path: Path) -> None:
    parent = _value_at(obj, path[:-1]) if len(path) > 1 else obj
    step = path[-1]
    if step.startswith("f:") and isinstance(parent, dict):
        parent.pop(step[2:], None)
    elif step.startswith("k:") and isinstance(parent, list):
        wanted = json.loads(step[2:])
        parent[:] = [i for i in parent if {k: i.get(k) for k in wanted} != wanted]


_ABSENT = object()


def _tree(paths: list[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for step in path:
            node = node.setdefault(step, {})
    return tree


def _paths(tree: Any, prefix: Path = ()) -> list[Path]:
    if not isinstance(tree, dict) or not tree:
        return [prefix] if prefix else []
    out: list[Path] = []
    for step, sub in tree.items():
        if step != ".":
            out.extend(_paths(sub, (*prefix, step)))
    return out


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found = obj.get("metadata", {}).get("managedFields")
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _manager_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", ""))


def _overlaps(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _describe(path: Path) -> str:
    text = ""
    for step in path:
        if step.startswith("f:"):
            text += "." + step[2:]
        else:
            pairs = ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(step[2:]).items())
            text += f"[{pairs}]"
    return text


def _printed(entry: dict[str, Any]) -> str:
    name = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        name += f" with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        return f"{name} using {entry.get('apiVersion')} at {entry.get('time')}"
    return name


def _conflict(conflicts: list[tuple[dict[str, Any], Path]]) -> ApiStatusError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_printed(e)}", "field": _describe(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_printed(entry)}: {_describe(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_printed(entry), []).append(_describe(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiStatusError(409, "Conflict", message, details={"causes": causes})


def _entry(
    rtype: ResourceType, manager: str, operation: str, paths: list[Path], now: float
) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": rtype.api_version,
        "time": rfc3339(now),
        "fieldsType": "FieldsV1",
        "fieldsV1": _tree(paths),
    }


def _store(obj: dict[str, Any], owned: list[tuple[dict[str, Any], list[Path]]]) -> None:
    """Write the entries that still own a field; an object nobody manages has no managedFields."""
    kept = [{**entry, "fieldsV1": _tree(paths)} for entry, paths in owned if paths]
    meta = obj.setdefault("metadata", {})
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


def apply(
    rtype: ResourceType,
    current: dict[str, Any] | None,
    config: dict[str, Any],
    merged: dict[str, Any],
    *,
    manager: str,
    force: bool,
    now: float,
) -> None:
    """Check ``config`` applied by ``manager`` over ``current`` (None: a create) and write the ownership
    into ``merged`` (the object the apply makes): 409 on another manager's field it would change, the
    fields ``manager`` applied before and no longer applies removed from ``merged``."""
    applied = leaves(rtype, config)
    entries = _entries(current) if current is not None else []
    me = (manager, "Apply", "")
    owned = [(e, _paths(e.get("fieldsV1"))) for e in entries]
    conflicts: list[tuple[dict[str, Any], Path]] = []
    for entry, paths in owned:
        if _manager_key(entry) == me:
            continue
        for path in paths:
            for mine, value in applied.items():
                if _overlaps(path, mine) and _value_at(current, mine) != value:
                    conflicts.append((entry, path))
                    break
    if conflicts and not force:
        raise _conflict(conflicts)
    taken = {p for _e, p in conflicts}
    previous = next((paths for e, paths in owned if _manager_key(e) == me), [])
    others = [p for e, paths in owned if _manager_key(e) != me for p in paths if p not in taken]
    for path in previous:
        if path not in applied and not any(_overlaps(path, o) for o in others):
            _remove_at(merged, path)
    result = [(e, [p for p in paths if p not in taken]) for e, paths in owned if _manager_key(e) != me]
    mine_entry = _entry(rtype, manager, "Apply", [], now)
    result.append((mine_entry, sorted(applied)))
    _store(merged, result)


def update(
    rtype: ResourceType,
    current: dict[str, Any] | None,
    written: dict[str, Any],
    *,
    manager: str,
    now: float,
    subresource: str = "",
) -> None:
    """Record a write that is not an apply: ``manager`` takes the fields it changes (all of them for a
    create), the fields it removes are nobody's; ``written`` gets the managedFields."""
    before = leaves(rtype, current) if current is not None else {}
    after = leaves(rtype, written)
    changed = sorted(p for p, v in after.items() if before.get(p, _ABSENT) != v)
    owned = [(e, _paths(e.get("fieldsV1"))) for e in (_entries(current) if current is not None else [])]
    result: list[tuple[dict[str, Any], list[Path]]] = []
    me = (manager, "Update", subresource)
    mine: list[Path] = list(changed)
    for entry, paths in owned:
        alive = [p for p in paths if _value_at(written, p) is not _ABSENT]
        if _manager_key(entry) == me:
            mine = sorted(set(alive) | set(changed))
            continue
        result.append((entry, [p for p in alive if not any(_overlaps(p, c) for c in changed)]))
    if mine:
        entry = _entry(rtype, manager, "Update", [], now)
        if subresource:
            entry["subresource"] = subresource
        result.append((entry, mine))
    _store(written, result)


def manager_of(query: dict[str, str], user_agent: str) -> str:
    """The field manager of a write: ``fieldManager``, else the user agent's first word, as upstream."""
    given = query.get("fieldManager")
    if given:
        return given[:128]
    return (user_agent.split("/", 1)[0] or "unknown")[:128]
