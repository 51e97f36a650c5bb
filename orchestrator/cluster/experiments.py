"""A catalog entry as a standalone Chaos Toolkit experiment: steady-state probe, method and rollbacks.

The experiment does what the marathon's injector does, with Chaos Toolkit's own providers: ``chaosk8s``
actions for Chaos Mesh objects, pods and nodes, ``kubectl patch`` for releases and settings, and a
``chaosprometheus`` probe whose PromQL returns 1 while the entry's symptom probe is healthy.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.catalog.faults import ChaosFault, CodeFault, ConfigFault
from orchestrator.cluster import chaos
from orchestrator.cluster.fields import Patch, field_patch, read_field

Json = dict[str, Any]
Entry = CodeFault | ConfigFault | ChaosFault
_KINDS = {"deployment": "deployment", "service": "service", "configmap": "configmap"}


def _python(name: str, module: str, func: str, arguments: Json) -> Json:
    provider = {"type": "python", "module": module, "func": func, "arguments": arguments}
    return {"type": "action", "name": name, "provider": provider}


def _kubectl_patch(name: str, *, kind: str, object_name: str, namespace: str, patch: Patch) -> Json:
    style = "strategic" if patch.style == "strategic" else "json"
    arguments = [
        "patch",
        kind,
        object_name,
        "-n",
        namespace,
        "--type",
        style,
        "-p",
        json.dumps(patch.body, sort_keys=True),
    ]
    return {
        "type": "action",
        "name": name,
        "provider": {"type": "process", "path": "kubectl", "arguments": arguments},
    }


def _steady_state(entry: Entry, namespace: str) -> Json:
    query = entry.probe.query.replace("$namespace", namespace)
    healthy = entry.probe.healthy
    comparison = f"scalar({query}) {healthy.op} bool {healthy.value}"
    probe = {
        "type": "probe",
        "name": "symptom-probe-is-healthy",
        "tolerance": {"type": "jsonpath", "path": "$.data.result[1]", "expect": "1"},
        "provider": {
            "type": "python",
            "module": "chaosprometheus.probes",
            "func": "query",
            "arguments": {"query": comparison},
        },
    }
    return {"title": f"{entry.probe.query} {healthy.op} {healthy.value}", "probes": [probe]}


def _method_and_rollbacks(
    entry: Entry, *, namespace: str, chaos_namespace: str, baseline: Json | None
) -> tuple[list[Json], list[Json]]:
    if isinstance(entry, ChaosFault):
        kind = entry.inject.kind
        if kind in chaos.CRD_KINDS:
            name = f"{kind.lower()}-{entry.id}"
            body = chaos.chaos_object(
                inject=entry.inject,
                name=name,
                chaos_namespace=chaos_namespace,
                app_namespace=namespace,
                target=entry.target,
            )
            where = {
                "group": "chaos-mesh.org",
                "version": "v1alpha1",
                "plural": chaos.plural(kind),
                "ns": chaos_namespace,
            }
            return (
                [
                    _python(
                        f"create-{kind.lower()}",
                        "chaosk8s.crd.actions",
                        "create_custom_object",
                        {**where, "resource": body},
                    )
                ],
                [
                    _python(
                        f"delete-{kind.lower()}",
                        "chaosk8s.crd.actions",
                        "delete_custom_object",
                        {**where, "name": name},
                    )
                ],
            )
        if kind == "terminate-pods":
            arguments = {
                "label_selector": f"app={entry.target}",
                "ns": namespace,
                "all": True,
                "grace_period": 0,
            }
            return [_python("terminate-pods", "chaosk8s.pod.actions", "terminate_pods", arguments)], []
        node = {"name": str(entry.inject.spec.get("node", ""))} if entry.inject.spec.get("node") else {}
        selector = node or {"label_selector": "kubernetes.io/os=linux"}
        return (
            [_python("cordon-node", "chaosk8s.node.actions", "cordon_node", selector)],
            [_python("uncordon-node", "chaosk8s.node.actions", "uncordon_node", selector)],
        )
    if baseline is None:
        raise ValueError(f"{entry.id}: a {entry.mechanism} fault needs the baseline object to export")
    if isinstance(entry, CodeFault):
        field, container, object_kind, object_name = "image", None, "deployment", entry.target
        image = str(read_field(baseline, field="image"))
        value: str | int | None = f"{image.rsplit(':', 1)[0]}:{entry.inject.image_tag}"
    else:
        field, container = entry.inject.field, entry.inject.container
        object_kind, object_name, value = (
            _KINDS[entry.inject.object],
            entry.inject.name or entry.target,
            entry.inject.value,
        )
    previous = read_field(baseline, field=field, container=container)
    inject = field_patch(baseline, field=field, value=value, container=container)
    restore = field_patch(baseline, field=field, value=previous, container=container)
    return (
        [
            _kubectl_patch(
                f"change-{field.replace('/', '-')}",
                kind=object_kind,
                object_name=object_name,
                namespace=namespace,
                patch=inject,
            )
        ],
        [
            _kubectl_patch(
                f"restore-{field.replace('/', '-')}",
                kind=object_kind,
                object_name=object_name,
                namespace=namespace,
                patch=restore,
            )
        ],
    )


def experiment(
    entry: Entry, *, namespace: str, chaos_namespace: str, prometheus_url: str, baseline: Json | None = None
) -> Json:
    """The Chaos Toolkit experiment for ``entry`` (no side effects).

    ``baseline`` is the entry's object as deployed before any fault (from the app's manifests); code and
    config faults need it to know the value their rollback restores.
    """
    method, rollbacks = _method_and_rollbacks(
        entry, namespace=namespace, chaos_namespace=chaos_namespace, baseline=baseline
    )
    method.append(
        {
            "type": "probe",
            "name": "symptom-after-injection",
            "provider": _steady_state(entry, namespace)["probes"][0]["provider"],
        }
    )
    return {
        "version": "1.0.0",
        "title": f"{entry.id}: {entry.description}",
        "description": entry.description,
        "tags": ["marathon", entry.app, str(entry.category), str(entry.mechanism)],
        "configuration": {"prometheus_base_url": prometheus_url},
        "steady-state-hypothesis": _steady_state(entry, namespace),
        "method": method,
        "rollbacks": rollbacks,
    }
