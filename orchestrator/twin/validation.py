"""Admission checks of the twin's API server: the 400 and 422 answers a real API server gives.

Only what an operator can plausibly get wrong is checked (names, replicas, containers, quantities, ports,
selectors, immutable fields); every problem of one request is reported at once in ``details.causes``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import ApiStatusError
from orchestrator.twin.resources import RBAC_GROUP, ResourceType
from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_KIND, CHAOS_MODES
from orchestrator.vocabulary.quantities import parse_quantity

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


@dataclass(frozen=True)
class Cause:
    field: str
    reason: str  # FieldValueInvalid | FieldValueRequired | FieldValueForbidden | FieldValueNotSupported
    message: str


def _render(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def invalid(path: str, value: object, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", f"Invalid value: {_render(value)}: {detail}")


def required(path: str) -> Cause:
    return Cause(path, "FieldValueRequired", "Required value")


def raise_invalid(rtype: ResourceType, name: str, causes: list[Cause]) -> None:
    """Raise the 422 Invalid Status for ``causes`` (no-op when there are none)."""
    if not causes:
        return
    qualified = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
    parts = [f"{c.field}: {c.message}" for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    raise ApiStatusError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {summary}',
        details={
            "name": name,
            "group": rtype.group,
            "kind": rtype.kind,
            "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes],
        },
    )


def _check_name(rtype: ResourceType, name: object, causes: list[Cause]) -> None:
    if not isinstance(name, str) or not name:
        causes.append(
            Cause("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")
        )
        return
    if rtype.kind == "Service":
        if not _DNS_1035.match(name) or len(name) > 63:
            causes.append(
                invalid(
                    "metadata.name",
                    name,
                    "a DNS-1035 label must consist of lower case "
                    "alphanumeric characters or '-', start with an alphabetic character, and end "
                    "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
                    "for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                )
            )
    elif rtype.group == RBAC_GROUP:
        # RBAC names are path segments (``system:controller:...`` is a valid role name).
        if name in (".", "..") or "/" in name or "%" in name:
            causes.append(invalid("metadata.name", name, "may not contain '/' or '%'"))
    elif rtype.kind == "Namespace":
        if not _DNS_LABEL.match(name) or len(name) > 63:
            causes.append(
                invalid(
                    "metadata.name",
                    name,
                    "a lowercase RFC 1123 label must consist of lower "
                    "case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                )
            )
    elif not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
        causes.append(
            invalid(
                "metadata.name",
                name,
                "a lowercase RFC 1123 subdomain must consist of lower "
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        )


def _check_labels(path: str, labels: object, causes: list[Cause]) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        causes.append(invalid(path, labels, "must be a map of strings"))
        return
    for key, value in labels.items():
        name = key.rsplit("/", 1)[-1]
        if not _LABEL_NAME.match(name) or len(name) > 63:
            causes.append(
                invalid(
                    path,
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character",
                )
            )
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            causes.append(
                invalid(
                    f"{path}",
                    value,
                    "a valid label must be an empty string or consist of "
                    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character",
                )
            )


def _quantities(path: str, values: object) -> dict[str, float]:
    if not isinstance(values, dict):
        return {}
    parsed: dict[str, float] = {}
    for name, raw in values.items():
        try:
            parsed[name] = parse_quantity(raw)
        except ValueError as exc:
            # A malformed quantity fails decoding, before validation: upstream answers 400, not 422.
            raise ApiStatusError(400, "BadRequest", f"{path}[{name}]: {exc}") from exc
    return parsed


def _check_containers(path: str, spec: dict[str, Any], causes: list[Cause]) -> None:
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        causes.append(required(f"{path}.containers"))
        return
    seen: set[str] = set()
    for index, container in enumerate(containers):
        where = f"{path}.containers[{index}]"
        if not isinstance(container, dict):
            causes.append(invalid(where, container, "must be an object"))
            continue
        name = container.get("name")
        if not isinstance(name, str) or not name:
            causes.append(required(f"{where}.name"))
        elif not _DNS_LABEL.match(name) or len(name) > 63:
            causes.append(
                invalid(
                    f"{where}.name",
                    name,
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
                )
            )
        elif name in seen:
            causes.append(Cause(f"{where}.name", "FieldValueDuplicate", f"Duplicate value: {_render(name)}"))
        else:
            seen.add(name)
        if not isinstance(container.get("image"), str) or not container.get("image", "").strip():
            causes.append(required(f"{where}.image"))
        resources = container.get("resources") or {}
        requests = _quantities(f"{where}.resources.requests", resources.get("requests"))
        limits = _quantities(f"{where}.resources.limits", resources.get("limits"))
        for resource, amount in sorted({**requests, **limits}.items()):
            if amount < 0:
                causes.append(
                    invalid(
                        f"{where}.resources.limits[{resource}]", amount, "must be greater than or equal to 0"
                    )
                )
        for resource, request in sorted(requests.items()):
            if resource in limits and request > limits[resource]:
                causes.append(
                    invalid(
                        f"{where}.resources.requests",
                        resources["requests"][resource],
                        f"must be less than or equal to {resource} limit of {resources['limits'][resource]}",
                    )
                )
        for port_index, port in enumerate(container.get("ports") or []):
            number = port.get("containerPort") if isinstance(port, dict) else None
            if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
                causes.append(
                    invalid(
                        f"{where}.ports[{port_index}].containerPort",
                        number,
                        "must be between 1 and 65535, inclusive",
                    )
                )
        for env_index, env in enumerate(container.get("env") or []):
            env_name = env.get("name") if isinstance(env, dict) else None
            if not isinstance(env_name, str) or not _ENV_NAME.match(env_name):
                causes.append(
                    invalid(
                        f"{where}.env[{env_index}].name",
                        env_name,
                        "a valid environment variable name must consist of alphabetic "
                        "characters, digits, '_', '-', or '.', and must not start with a digit",
                    )
                )


def _check_int(path: str, value: object, causes: list[Cause], *, minimum: int = 0) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiStatusError(400, "BadRequest", f"{path}: expected an integer, got {_render(value)}")
    if value < minimum:
        causes.append(invalid(path, value, f"must be greater than or equal to {minimum}"))


def _check_workload(rtype: ResourceType, obj: dict[str, Any], causes: list[Cause]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        causes.append(required("spec"))
        return
    _check_int("spec.replicas", spec.get("replicas"), causes)
    _check_int("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"), causes)
    _check_int("spec.minReadySeconds", spec.get("minReadySeconds"), causes)
    _check_int("spec.progressDeadlineSeconds", spec.get("progressDeadlineSeconds"), causes, minimum=1)
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        causes.append(required("spec.selector"))
    if not isinstance(template, dict):
        causes.append(required("spec.template"))
        return
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    _check_labels("spec.template.metadata.labels", template_labels, causes)
    if isinstance(selector, dict):
        for key, value in (selector.get("matchLabels") or {}).items():
            if template_labels.get(key) != value:
                causes.append(
                    invalid(
                        "spec.template.metadata.labels",
                        template_labels,
                        "`selector` does not match template `labels`",
                    )
                )
                break
    _check_containers("spec.template.spec", template.get("spec") or {}, causes)
    strategy = spec.get("strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    if rolling.get("maxSurge") in (0, "0%") and rolling.get("maxUnavailable") in (0, "0%"):
        causes.append(
            invalid(
                "spec.strategy.rollingUpdate.maxUnavailable",
                rolling.get("maxUnavailable"),
                "may not be 0 when `maxSurge` is 0",
            )
        )


def _check_chaos(rtype: ResourceType, obj: dict[str, Any], causes: list[Cause]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        causes.append(required("spec"))
        return
    if "mode" in spec and spec["mode"] not in CHAOS_MODES:
        causes.append(
            Cause(
                "spec.mode",
                "FieldValueNotSupported",
                f"Unsupported value: {_render(spec['mode'])}: supported values: "
                + ", ".join(f'"{m}"' for m in CHAOS_MODES),
            )
        )
    actions = CHAOS_KIND[rtype.kind].actions
    if actions and spec.get("action") not in actions:
        causes.append(
            Cause(
                "spec.action",
                "FieldValueNotSupported",
                f"Unsupported value: {_render(spec.get('action'))}: supported values: "
                + ", ".join(f'"{a}"' for a in actions),
            )
        )


def validate(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Raise the 400/422 Status a real API server gives for ``obj``; return quietly if it is admissible."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    _check_name(rtype, meta.get("name"), causes)
    _check_labels("metadata.labels", meta.get("labels"), causes)
    if rtype.kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        _check_workload(rtype, obj, causes)
    elif rtype.kind == "Pod":
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _check_containers("spec", spec, causes)
        else:
            causes.append(required("spec"))
    elif rtype.kind == "Service":
        for index, port in enumerate((obj.get("spec") or {}).get("ports") or []):
            number = port.get("port") if isinstance(port, dict) else None
            if not isinstance(number, int) or not 1 <= number <= 65535:
                causes.append(
                    invalid(f"spec.ports[{index}].port", number, "must be between 1 and 65535, inclusive")
                )
    elif rtype.group == CHAOS_GROUP:
        _check_chaos(rtype, obj, causes)
    raise_invalid(rtype, str(meta.get("name") or ""), causes)


def validate_update(rtype: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    """The checks only an update has: immutable selectors, and the narrow set of mutable pod fields."""
    name = str(new["metadata"].get("name"))
    causes: list[Cause] = []
    if rtype.kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        before, after = (old.get("spec") or {}).get("selector"), (new.get("spec") or {}).get("selector")
        if before != after:
            causes.append(invalid("spec.selector", after, "field is immutable"))
    if rtype.kind == "Pod" and _pod_spec_without_images(old) != _pod_spec_without_images(new):
        causes.append(Cause("spec", "FieldValueForbidden", f"Forbidden: {_POD_UPDATE_FORBIDDEN}"))
    raise_invalid(rtype, name, causes)


def _pod_spec_without_images(pod: dict[str, Any]) -> Any:
    spec = dict(pod.get("spec") or {})
    spec.pop("activeDeadlineSeconds", None)
    spec.pop("tolerations", None)
    spec["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
    return spec
