"""Chaos Mesh injects into the pods it selected at creation: later pods (a restart, a rollout) escape."""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model.chaos import Effects, effects
from orchestrator.twin.store import Obj
from tests.twin.model.worlds import chaos, manifests, pod_of, running_pods, world

OB = "online-boutique"
TOPOLOGY = load_topology(OB)
DOCS = manifests(OB)
CATALOG = {"namespaces": [OB], "labelSelectors": {"app": "productcatalogservice"}}
LATER = "2026-01-01T00:05:00Z"
INJECTED = "2026-01-01T00:01:00Z"


def _restarted(workload: str) -> list[Obj]:
    """The cluster after a rollout of ``workload``: its old pod replaced by a pod created later."""
    pods = running_pods(DOCS)
    old = pod_of(pods, workload)
    new = copy.deepcopy(old)
    new["metadata"].update(name=f"{workload}-7b6c5d4e3f-00000", uid="uid-new", creationTimestamp=LATER)
    return [p for p in pods if p is not old] + [new]


def _step(obj: dict[str, Any], pods: list[Obj], *, now: float, before: Effects | None = None) -> Effects:
    shot = world(TOPOLOGY, DOCS, now=now, pods=pods, chaos=[obj])
    return effects(shot, before.selected if before is not None else None)


def test_a_restart_escapes_a_network_chaos_injected_before_it() -> None:
    obj = chaos(
        "NetworkChaos",
        "d",
        {"action": "delay", "mode": "all", "selector": CATALOG, "delay": {"latency": "500ms"}},
        created=INJECTED,
    )
    first = _step(obj, running_pods(DOCS), now=1.8e9)
    assert first.net[0].source == {"productcatalogservice-5d8f7c9b4f-00000"}
    after = _step(obj, _restarted("productcatalogservice"), now=1.8e9, before=first)
    assert after.net[0].source == frozenset()


def test_a_restart_escapes_pod_failure_and_stress_but_other_pods_stay_affected() -> None:
    failure = chaos("PodChaos", "f", {"action": "pod-failure", "mode": "all", "selector": CATALOG})
    stress = chaos(
        "StressChaos",
        "s",
        {
            "mode": "all",
            "selector": {"namespaces": [OB], "labelSelectors": {"app": "currencyservice"}},
            "stressors": {"cpu": {"workers": 2, "load": 100}},
        },
    )
    pods = running_pods(DOCS)
    shot = world(TOPOLOGY, DOCS, now=1.8e9, pods=pods, chaos=[failure, stress])
    first = effects(shot)
    assert first.failing == {"productcatalogservice-5d8f7c9b4f-00000"}
    assert first.stress_cpu == {"currencyservice-5d8f7c9b4f-00000": 2.0}
    later = world(
        TOPOLOGY, DOCS, now=1.8e9, pods=_restarted("productcatalogservice"), chaos=[failure, stress]
    )
    after = effects(later, first.selected)
    assert after.failing == set()
    assert after.stress_cpu == {"currencyservice-5d8f7c9b4f-00000": 2.0}


def test_a_pod_created_after_the_object_is_not_selected_even_without_a_record() -> None:
    obj = chaos("PodChaos", "f", {"action": "pod-failure", "mode": "all", "selector": CATALOG})
    assert _step(obj, _restarted("productcatalogservice"), now=1.8e9).failing == set()


def test_mode_one_does_not_move_to_another_replica_when_its_pod_is_gone() -> None:
    docs = copy.deepcopy(DOCS)
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "productcatalogservice":
            doc["spec"]["replicas"] = 3
    pods = running_pods(docs)
    obj = chaos("PodChaos", "f", {"action": "pod-failure", "mode": "one", "selector": CATALOG})
    first = effects(world(TOPOLOGY, docs, now=1.8e9, pods=pods, chaos=[obj]))
    (victim,) = first.failing
    remaining = [p for p in pods if p["metadata"]["name"] != victim]
    after = effects(world(TOPOLOGY, docs, now=1.8e9, pods=remaining, chaos=[obj]), first.selected)
    assert after.failing == set()
