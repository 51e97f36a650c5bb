"""Reading one configuration field of a Kubernetes object and building the patch that sets only that field.

Pure functions over the JSON form of objects (no side effects). A config fault and its revert touch exactly
one field; the patches here are strategic-merge patches keyed by container, env and port names, so a fault
on one field composes with a concurrent fault on another field of the same object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from orchestrator.errors import InjectionError

Value = str | int | None
Json = dict[str, Any]

FLAGD_FILE = "demo.flagd.json"
CHANGE_CAUSE = "kubernetes.io/change-cause"  # why a workload changed, copied to its revision
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # what ``kubectl rollout restart`` sets on a pod template


def _container(deployment: Json, container: str | None) -> Json:
    containers: list[Json] = deployment["spec"]["template"]["spec"]["containers"]
    if container is None:
        return containers[0]
    for candidate in containers:
        if candidate["name"] == container:
            return candidate
    raise InjectionError(f"deployment {deployment['metadata']['name']!r} has no container {container!r}")


def _probe_port(probe: Json) -> Value:
    for handler in ("httpGet", "grpc", "tcpSocket"):
        if handler in probe:
            port: Value = probe[handler].get("port")
            return port
    return None


def _probe_handler(probe: Json) -> str:
    for handler in ("httpGet", "grpc", "tcpSocket"):
        if handler in probe:
            return handler
    raise InjectionError("the probe has no httpGet, grpc or tcpSocket handler to change")


def read_field(obj: Json, *, field: str, container: str | None = None) -> Value:
    """The current value of ``field`` (the catalog's field path) in ``obj``; ``None`` when unset."""
    parts = field.split("/")
    kind = obj.get("kind")
    if kind == "Service":
        if field != "targetPort":
            raise InjectionError(f"a Service has no field {field!r}")
        target: Value = obj["spec"]["ports"][0].get("targetPort")
        return target
    if kind == "ConfigMap":
        flags = json.loads(obj.get("data", {}).get(FLAGD_FILE, "{}")).get("flags", {})
        variant: Value = flags.get(parts[1], {}).get("defaultVariant")
        return variant
    if field == "replicas":
        replicas: Value = obj["spec"].get("replicas", 1)
        return replicas
    spec = _container(obj, container)
    if parts[0] == "env":
        for item in spec.get("env", []):
            if item["name"] == parts[1]:
                env_value: Value = item.get("value")
                return env_value
        return None
    if parts[0] == "resources":
        resource: Value = spec.get("resources", {}).get(parts[1], {}).get(parts[2])
        return resource
    if parts[0] == "probe":
        probe = spec.get(f"{parts[1]}Probe")
        if probe is None:
            return None
        if parts[2] == "port":
            return _probe_port(probe)
        path: Value = probe.get("httpGet", {}).get("path")
        return path
    if parts[0] == "port":
        for port in spec.get("ports", []):
            if port.get("name") == parts[1]:
                number: Value = port["containerPort"]
                return number
        return None
    if field == "image":
        image: Value = spec["image"]
        return image
    if field == "args":
        return " ".join(str(word) for word in spec.get("args") or ()) or None
    raise InjectionError(f"unsupported config field {field!r} on a {kind}")


@dataclass(frozen=True)
class Patch:
    """A patch body and its content type: ``strategic`` (merge by names) or ``json`` (RFC 6902 operations)."""

    style: Literal["strategic", "json"]
    body: Any


def field_patch(obj: Json, *, field: str, value: Value, container: str | None = None) -> Patch:
    """A patch that sets ``field`` to ``value`` (``None`` clears it) and touches nothing else."""
    parts = field.split("/")
    kind = obj.get("kind")
    if kind == "Service":
        port = obj["spec"]["ports"][0]
        return Patch("strategic", {"spec": {"ports": [{"port": port["port"], "targetPort": value}]}})
    if kind == "ConfigMap":
        document = json.loads(obj.get("data", {}).get(FLAGD_FILE, "{}"))
        flag = document.setdefault("flags", {}).setdefault(parts[1], {})
        flag["defaultVariant"] = value
        return Patch("strategic", {"data": {FLAGD_FILE: json.dumps(document, indent=2, sort_keys=True)}})
    if field == "replicas":
        return Patch("strategic", {"spec": {"replicas": value}})
    containers: list[Json] = obj["spec"]["template"]["spec"]["containers"]
    target = _container(obj, container)
    name = target["name"]
    change: Json
    if parts[0] == "env":
        cleared = {"name": parts[1], "$patch": "delete"}
        change = {"env": [{"name": parts[1], "value": value} if value is not None else cleared]}
    elif parts[0] == "resources":
        change = {"resources": {parts[1]: {parts[2]: value}}}
    elif parts[0] == "probe":
        probe_key = f"{parts[1]}Probe"
        probe = target.get(probe_key)
        if probe is None:
            raise InjectionError(f"container {name!r} has no {probe_key}")
        handler = "httpGet" if parts[2] == "path" else _probe_handler(probe)
        change = {probe_key: {handler: {parts[2]: value}}}
    elif parts[0] == "port":
        # Container ports merge on the port number itself, so renumbering one is a JSON patch with a guard.
        ports = target.get("ports", [])
        index = next((i for i, p in enumerate(ports) if p.get("name") == parts[1]), None)
        if index is None:
            raise InjectionError(f"container {name!r} has no port named {parts[1]!r}")
        path = f"/spec/template/spec/containers/{containers.index(target)}/ports/{index}/containerPort"
        return Patch(
            "json",
            [
                {"op": "test", "path": path, "value": ports[index]["containerPort"]},
                {"op": "replace", "path": path, "value": value},
            ],
        )
    elif field == "image":
        change = {"image": value}
    elif field == "args":
        # A list of words is replaced whole; null removes it, so the image's default command runs again.
        change = {"args": str(value).split() if value is not None else None}
    else:
        raise InjectionError(f"unsupported config field {field!r} on a {kind}")
    return Patch("strategic", {"spec": {"template": {"spec": {"containers": [{"name": name, **change}]}}}})


def selector_of(workload: Json) -> str:
    """A workload's label selector as a list call takes it (``k=v,...``; its ``matchLabels``, which is what
    the apps' workloads select by). No side effects."""
    labels = workload["spec"]["selector"].get("matchLabels", {})
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def restart_patch(epoch_s: float) -> tuple[Patch, str]:
    """The patch ``kubectl rollout restart`` makes at Unix time ``epoch_s`` (a new restartedAt annotation on
    the pod template, so the workload rolls out again), and that stamp (no side effects)."""
    stamp = datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
    return Patch("strategic", body), stamp
