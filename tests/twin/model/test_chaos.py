"""Chaos Mesh objects as effects on the simulated pods: selection, actions, duration and pausing."""

from __future__ import annotations

from typing import Any

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model.chaos import SIMULATED_KINDS, effects
from orchestrator.vocabulary.chaos import CRD_KINDS
from tests.twin.model.worlds import chaos, manifests, world

OB = "online-boutique"
TOPOLOGY = load_topology(OB)
CATALOG = {"namespaces": [OB], "labelSelectors": {"app": "productcatalogservice"}}


def _effects(*objects: dict[str, Any], now: float = 10.0) -> Any:
    return effects(world(TOPOLOGY, manifests(OB), now=now, chaos=list(objects)))


def test_network_delay_touches_calls_to_and_from_the_selected_pods_only() -> None:
    found = _effects(
        chaos(
            "NetworkChaos",
            "d",
            {
                "action": "delay",
                "mode": "all",
                "selector": CATALOG,
                "delay": {"latency": "500ms", "jitter": "10ms"},
            },
        )
    )
    (rule,) = found.net
    assert rule.delay_ms == 500 and rule.jitter_ms == 10
    catalog = next(iter(rule.source))
    assert catalog.startswith("productcatalogservice-")
    assert rule.touches("frontend-5d8f7c9b4f-00000", catalog)
    assert not rule.touches("frontend-5d8f7c9b4f-00000", "cartservice-5d8f7c9b4f-00000")


def test_a_network_target_limits_the_rule_to_calls_between_both_sides() -> None:
    spec = {
        "action": "partition",
        "mode": "all",
        "direction": "both",
        "selector": CATALOG,
        "target": {"mode": "all", "selector": {"labelSelectors": {"app": "recommendationservice"}}},
    }
    (rule,) = _effects(chaos("NetworkChaos", "p", spec)).net
    catalog = next(iter(rule.source))
    assert rule.touches("recommendationservice-5d8f7c9b4f-00000", catalog)
    assert not rule.touches("frontend-5d8f7c9b4f-00000", catalog)


def test_loss_and_bandwidth_are_read_from_their_specs() -> None:
    loss = _effects(
        chaos("NetworkChaos", "l", {"action": "loss", "selector": CATALOG, "loss": {"loss": "35"}})
    )
    assert loss.net[0].loss == 0.35
    band = _effects(
        chaos(
            "NetworkChaos", "b", {"action": "bandwidth", "selector": CATALOG, "bandwidth": {"rate": "1mbps"}}
        )
    )
    assert band.net[0].rate_bps == 1e6


def test_an_object_past_its_duration_or_paused_has_no_effect() -> None:
    spec = {"action": "pod-failure", "mode": "all", "duration": "60s", "selector": CATALOG}
    assert _effects(chaos("PodChaos", "f", spec), now=30.0).failing
    assert not _effects(chaos("PodChaos", "f", spec), now=61.0).failing
    paused = chaos("PodChaos", "f", {**spec, "duration": None})
    paused["metadata"]["annotations"] = {"experiment.chaos-mesh.org/pause": "true"}
    assert not _effects(paused).failing


def test_a_selector_without_namespaces_selects_in_the_objects_own_namespace() -> None:
    spec = {
        "action": "pod-failure",
        "mode": "all",
        "selector": {"labelSelectors": {"app": "productcatalogservice"}},
    }
    assert _effects(chaos("PodChaos", "f", spec)).failing
    assert not _effects(chaos("PodChaos", "f", spec, namespace="chaos-mesh")).failing


def test_stress_io_and_http_chaos_become_per_pod_effects() -> None:
    stress = _effects(
        chaos(
            "StressChaos",
            "s",
            {
                "mode": "all",
                "selector": CATALOG,
                "stressors": {"cpu": {"workers": 2, "load": 50}, "memory": {"workers": 1, "size": "100MB"}},
            },
        )
    )
    assert list(stress.stress_cpu.values()) == [1.0]
    assert list(stress.stress_memory.values()) == [100e6]
    redis = {"labelSelectors": {"app": "redis-cart"}}
    io = _effects(
        chaos("IOChaos", "i", {"action": "latency", "delay": "200ms", "percent": 50, "selector": redis})
    )
    assert list(io.io.values()) == [(0.2, 0.5, False)]
    http = _effects(
        chaos(
            "HTTPChaos",
            "h",
            {
                "mode": "all",
                "target": "Request",
                "method": "GET",
                "path": "/product/*",
                "abort": True,
                "selector": {"labelSelectors": {"app": "frontend"}},
            },
        )
    )
    (rules,) = http.http.values()
    assert rules[0].matches("GET /product/{id}")
    assert not rules[0].matches("POST /cart")


def test_mode_one_picks_the_same_pod_every_step() -> None:
    docs = manifests(OB)
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "productcatalogservice":
            doc["spec"]["replicas"] = 3
    spec = {"action": "pod-kill", "mode": "one", "selector": CATALOG}
    picks = {
        effects(world(TOPOLOGY, docs, now=t, chaos=[chaos("PodChaos", "k", spec)])).pod_kills[0][1]
        for t in (5.0, 10.0, 15.0)
    }
    assert len(picks) == 1 and len(next(iter(picks))) == 1


def test_every_chaos_mesh_kind_of_the_vocabulary_has_a_simulated_effect() -> None:
    assert set(CRD_KINDS) == SIMULATED_KINDS
