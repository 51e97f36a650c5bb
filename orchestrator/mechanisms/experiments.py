"""A catalog entry as a standalone Chaos Toolkit experiment: steady-state probe, method and rollbacks.

The method and rollbacks are the entry's mechanism's own steps: for chaos, the very activities the injector
runs (``chaosk8s`` actions for Chaos Mesh objects, pods and nodes); for releases and settings, a ``kubectl
patch`` of the field the injector patches. A ``chaosprometheus`` probe returns 1 while the entry's symptom
probe is healthy.
"""

from __future__ import annotations

from orchestrator.catalog.faults import Entry
from orchestrator.cluster.fields import Json
from orchestrator.mechanisms.registry import mechanism_of


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


def experiment(
    entry: Entry, *, namespace: str, chaos_namespace: str, prometheus_url: str, baseline: Json | None = None
) -> Json:
    """The Chaos Toolkit experiment for ``entry`` (no side effects).

    ``baseline`` is the entry's object as deployed before any fault (from the app's manifests); code and
    config faults need it to know the value their rollback restores.
    """
    steps = mechanism_of(entry).steps(
        entry, namespace=namespace, chaos_namespace=chaos_namespace, baseline=baseline
    )
    method = [
        *steps.method,
        {
            "type": "probe",
            "name": "symptom-after-injection",
            "provider": _steady_state(entry, namespace)["probes"][0]["provider"],
        },
    ]
    return {
        "version": "1.0.0",
        "title": f"{entry.id}: {entry.description}",
        "description": entry.description,
        "tags": ["marathon", entry.app, str(entry.category), str(entry.mechanism)],
        "configuration": {"prometheus_base_url": prometheus_url},
        "steady-state-hypothesis": _steady_state(entry, namespace),
        "method": method,
        "rollbacks": steps.rollbacks,
    }
