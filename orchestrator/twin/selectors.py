"""Label and field selectors, parsed once and matched against plain object dicts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import ApiStatusError

_SET_RE = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")
_FIELD_RE = re.compile(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # != and notin also match objects without the label, as the API server does.
        return not present or labels[self.key] not in self.values


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside a set's parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    """Parse ``a=b,c!=d,e in (x,y),f notin (z),g,!h``; bad syntax is a 400 BadRequest as upstream."""
    if not text:
        return ()
    found: list[Requirement] = []
    for part in _split_top_level(text):
        eq = _EQ_RE.match(part)
        if eq:
            op = "!=" if eq.group(2) == "!=" else "="
            found.append(Requirement(eq.group(1), op, (eq.group(3),)))
            continue
        match = _SET_RE.match(part)
        if match is None or (match.group(1) and match.group(3)):
            raise ApiStatusError(400, "BadRequest", f"unable to parse requirement: {part.strip()!r}")
        negated, key, set_op, values = match.groups()
        if set_op:
            items = tuple(v.strip() for v in values.split(",") if v.strip())
            found.append(Requirement(key, set_op, items))
        else:
            found.append(Requirement(key, "!" if negated else "exists"))
    return tuple(found)


def selector_from_match(selector: dict[str, Any] | None) -> tuple[Requirement, ...]:
    """A ``LabelSelector`` object (matchLabels + matchExpressions) as requirements."""
    if not selector:
        return ()
    found = [Requirement(k, "=", (str(v),)) for k, v in sorted((selector.get("matchLabels") or {}).items())]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        found.append(Requirement(expr["key"], ops[expr["operator"]], tuple(expr.get("values") or ())))
    return tuple(found)


def labels_match(requirements: tuple[Requirement, ...], labels: dict[str, str] | None) -> bool:
    actual = labels or {}
    return all(r.matches(actual) for r in requirements)


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted field path; missing fields read as the empty string."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


# Field paths the API server accepts per kind; anything else is rejected as upstream does.
_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "Pod": (
        *_COMMON_FIELDS,
        "status.phase",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "Event": (
        *_COMMON_FIELDS,
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "ReplicaSet": (*_COMMON_FIELDS, "status.replicas"),
    "Secret": (*_COMMON_FIELDS, "type"),
    "Namespace": (*_COMMON_FIELDS, "status.phase"),
    "Node": (*_COMMON_FIELDS, "spec.unschedulable"),
}


def parse_field_selector(text: str | None, *, kind: str) -> Callable[[dict[str, Any]], bool]:
    """A predicate for ``metadata.name=x,status.phase!=Running``; unknown fields are a 400 as upstream."""
    if not text:
        return lambda _obj: True
    allowed = FIELD_LABELS.get(kind, _COMMON_FIELDS)
    checks: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        if not part.strip():
            continue
        match = _FIELD_RE.match(part)
        if match is None:
            raise ApiStatusError(400, "BadRequest", f"invalid selector: {text!r}; can't understand {part!r}")
        path, op, value = match.groups()
        if path not in allowed:
            raise ApiStatusError(400, "BadRequest", f"field label not supported: {path}")
        checks.append((path, op == "!=", value))

    def predicate(obj: dict[str, Any]) -> bool:
        for path, negate, value in checks:
            actual = field_value(obj, path)
            if path == "source" and kind == "Event":
                actual = field_value(obj, "source.component")
            if (actual == value) == negate:
                return False
        return True

    return predicate
