"""A catalog entry as a standalone Chaos Toolkit experiment: steady-state probe, method and rollbacks.

The method and rollbacks are the entry's mechanism's own steps: for chaos, the very activities the injector
runs (``chaosk8s`` actions for Chaos Mesh objects, pods and nodes); for releases and settings, a ``kubectl
patch`` of the field the injector patches. The method holds the fault for its duration (a pause after its
last action) before a probe records the symptom's value; the rollbacks then take the fault out, whatever
happened before them. A ``chaosprometheus`` probe returns 1 while the entry's symptom probe is healthy, so
a fault that shows its symptom makes the run deviate: the steady state holds before the method, not after.
"""

from __future__ import annotations

from orchestrator.catalog.faults import Entry
from orchestrator.cluster.fields import Json
from orchestrator.mechanisms.registry import mechanism_of

# As long as admission holds an entry before judging it (its screening window).
DEFAULT_HOLD_S = 300.0


def _symptom(entry: Entry, namespace: str) -> str:
    """The entry's symptom probe in the app's namespace."""
    return entry.probe.query.replace("$namespace", namespace)


def _prometheus_query(query: str) -> Json:
    return {
        "type": "python",
        "module": "chaosprometheus.probes",
        "func": "query",
        "arguments": {"query": query},
    }


def _steady_state(entry: Entry, namespace: str) -> Json:
    healthy, symptom = entry.probe.healthy, _symptom(entry, namespace)
    probe = {
        "type": "probe",
        "name": "symptom-probe-is-healthy",
        "tolerance": {"type": "jsonpath", "path": "$.data.result[1]", "expect": "1"},
        "provider": _prometheus_query(f"scalar({symptom}) {healthy.op} bool {healthy.value}"),
    }
    return {"title": f"{symptom} {healthy.op} {healthy.value}", "probes": [probe]}


def _held(activities: list[Json], hold_s: float) -> list[Json]:
    """``activities`` with a pause of ``hold_s`` seconds after the last one: the fault acts for that long."""
    if not activities:
        return []
    last = activities[-1]
    return [*activities[:-1], {**last, "pauses": {**last.get("pauses", {}), "after": hold_s}}]


def experiment(
    entry: Entry,
    *,
    namespace: str,
    chaos_namespace: str,
    prometheus_url: str,
    baseline: Json | None = None,
    hold_s: float = DEFAULT_HOLD_S,
) -> Json:
    """The Chaos Toolkit experiment for ``entry``, holding the fault ``hold_s`` seconds (no side effects).

    ``baseline`` is the entry's object as deployed before any fault (from the app's manifests); code and
    config faults need it to know the value their rollback restores.
    """
    steps = mechanism_of(entry).steps(
        entry, namespace=namespace, chaos_namespace=chaos_namespace, baseline=baseline
    )
    method = [
        *_held(steps.method, hold_s),
        {
            "type": "probe",
            "name": "symptom-under-fault",
            "provider": _prometheus_query(f"scalar({_symptom(entry, namespace)})"),
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
        # A fault left in the cluster outlives the run: take it out even when the run fails or is stopped.
        "runtime": {"rollbacks": {"strategy": "always"}},
    }
