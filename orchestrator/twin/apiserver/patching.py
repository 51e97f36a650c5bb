"""The three patch formats of the Kubernetes API: JSON merge patch, strategic merge patch, JSON patch.

All functions are pure: they return a new document and never mutate their inputs (no side effects).
Failures raise ``ApiStatusError`` with the code the API server answers (400 malformed, 422 not applicable).
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.errors import ApiStatusError

# patchMergeKey of the list fields the twin's kinds carry (from the Kubernetes API types).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
# Lists of scalars merged as sets (patchStrategy=merge on a primitive list).
SET_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _ports_key(items: list[Any]) -> str | None:
    for item in items:
        if isinstance(item, dict):
            if "containerPort" in item:
                return "containerPort"
            if "port" in item:
                return "port"
    return None


def _merge_key(field: str, patch_items: list[Any], target_items: list[Any]) -> str | None:
    if field == "ports":
        return _ports_key(patch_items) or _ports_key(target_items)
    return MERGE_KEYS.get(field)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge: like merge patch, but keyed lists merge by their merge key and directives apply.

    Supported: ``$patch: delete|replace`` on maps and keyed list items, ``$retainKeys``,
    ``$deleteFromPrimitiveList/<field>``; ``$setElementOrder/<field>`` is accepted and ignored.
    """
    return _smp(copy.deepcopy(target), patch)


def _smp(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive is not None:
        raise ApiStatusError(400, "BadRequest", f"Unknown patch type: {directive}")
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    if field in SET_LISTS:
        return current + [copy.deepcopy(v) for v in patch if v not in current]
    key = _merge_key(field, patch, current)
    if key is None or not all(isinstance(item, dict) for item in patch):
        # A list without a merge key is replaced whole; a `$patch: replace` item means the same.
        return [copy.deepcopy(v) for v in patch if not (isinstance(v, dict) and v.get("$patch") == "replace")]
    if any(item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(v) for v in patch if v.get("$patch") != "replace"]
    merged = list(current)
    for item in patch:
        if key not in item:
            raise ApiStatusError(400, "BadRequest", f"map: {item} does not contain declared merge key: {key}")
        index = next(
            (
                i
                for i, existing in enumerate(merged)
                if isinstance(existing, dict) and existing.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del merged[index]
            continue
        if index is None:
            merged.append(_smp({}, item))
        else:
            merged[index] = _smp(merged[index], item)
    return merged


# -- RFC 6902 -------------------------------------------------------------------------------------
def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise ApiStatusError(400, "BadRequest", f"invalid JSON pointer: {path!r}")
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _not_applicable(message: str) -> ApiStatusError:
    return ApiStatusError(
        422,
        "Invalid",
        f"the server rejected our request due to an error in our request: {message}",
        details={"causes": [{"reason": "FieldValueInvalid", "message": message}]},
    )


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    current = doc
    for part in parts[:-1]:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise _not_applicable(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")
    return current, parts[-1]


def _get(doc: Any, path: Any, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _not_applicable(f"jsonpatch {op} operation does not apply: doc is missing key: {path}")


def _remove(doc: Any, path: Any, op: str) -> Any:
    parts = _pointer(path)
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _not_applicable(f"jsonpatch {op} operation does not apply: doc is missing key: {path}")


def _add(doc: Any, path: Any, value: Any, op: str, *, replace: bool) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _not_applicable(f"jsonpatch replace operation does not apply: doc is missing key: {path}")
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(copy.deepcopy(value))
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = copy.deepcopy(value)
            else:
                parent.insert(int(last), copy.deepcopy(value))
        else:
            raise _not_applicable(f"jsonpatch {op} operation does not apply: index out of range: {path}")
    else:
        raise _not_applicable(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 operations (add, remove, replace, move, copy, test) applied to a copy of ``target``."""
    if not isinstance(operations, list):
        raise ApiStatusError(
            400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    doc = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise ApiStatusError(400, "BadRequest", f"invalid JSON patch operation: {operation!r}")
        op, path = operation["op"], operation.get("path")
        if op in ("add", "replace"):
            if "value" not in operation:
                raise _not_applicable(f"jsonpatch {op} operation does not apply: missing value")
            doc = _add(doc, path, operation["value"], op, replace=op == "replace")
        elif op == "remove":
            _remove(doc, path, op)
        elif op in ("move", "copy"):
            value = _get(doc, operation.get("from"), op)
            if op == "move":
                _remove(doc, operation.get("from"), op)
            doc = _add(doc, path, value, op, replace=False)
        elif op == "test":
            if _get(doc, path, op) != operation.get("value"):
                raise _not_applicable(f"testing value {path} failed")
        else:
            raise ApiStatusError(400, "BadRequest", f"Unexpected kind: {op}")
    return doc
