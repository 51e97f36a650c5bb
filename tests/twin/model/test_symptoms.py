"""Symptoms derived from pod specs, Services and chaos objects, on hand-built Online Boutique states."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model import chaos as chaos_effects
from orchestrator.twin.model.registry import ImageRegistry
from orchestrator.twin.model.state import container_spec
from orchestrator.twin.model.symptoms import TopologyIndex, probe_ok, reach, start_failure
from tests.twin.model.worlds import chaos, manifests, model, pod_of, running_pods, set_env, world

OB = "online-boutique"
TOPOLOGY = load_topology(OB)
INDEX = TopologyIndex(TOPOLOGY)


def _reach_from_cart(
    pods: list[dict[str, Any]],
    docs: list[dict[str, Any]] | None = None,
    objects: list[dict[str, Any]] | None = None,
) -> str | None:
    shot = world(TOPOLOGY, docs or manifests(OB), now=10.0, pods=pods, chaos=objects)
    cart = next(p for p in shot.pods["cartservice"])
    found = reach(
        index=INDEX,
        shot=shot,
        effects=chaos_effects.effects(shot),
        caller=TOPOLOGY.service("cartservice"),
        caller_pod=cart,
        callee="redis-cart",
    )
    return found.cause


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("redis-cart:6379", None),
        ("redis-cart.online-boutique.svc.cluster.local:6379", None),
        ("redis-cart:6380", "connection_refused"),
        ("redis-kart:6379", "dns_failure"),
        ("redis-cart.other.svc.cluster.local:6379", "dns_failure"),
        ("redis-cart:6379,user=cart,password=x", "auth_failed"),
        ("cartservice:7070", "upstream_error"),
    ],
)
def test_the_address_in_the_callers_env_decides_how_its_calls_fail(value: str, cause: str | None) -> None:
    pods = running_pods(manifests(OB))
    set_env(pod_of(pods, "cartservice"), "REDIS_ADDR", value)
    assert _reach_from_cart(pods) == cause


def test_a_service_target_port_no_container_listens_on_refuses_connections() -> None:
    docs = manifests(OB)
    svc = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "redis-cart")
    svc["spec"]["ports"][0]["targetPort"] = 6380
    assert _reach_from_cart(running_pods(docs), docs) == "connection_refused"


def test_a_callee_without_ready_pods_has_no_endpoints() -> None:
    pods = [p for p in running_pods(manifests(OB)) if not p["metadata"]["name"].startswith("redis-cart")]
    assert _reach_from_cart(pods) == "no_endpoints"


def test_dns_chaos_on_the_caller_fails_resolution_of_matching_hosts_only() -> None:
    pods = running_pods(manifests(OB))
    spec = {
        "action": "error",
        "mode": "all",
        "patterns": ["redis-cart.*"],
        "selector": {"labelSelectors": {"app": "cartservice"}},
    }
    assert _reach_from_cart(pods, objects=[chaos("DNSChaos", "dns", spec)]) == "dns_failure"
    spec["patterns"] = ["paymentservice.*"]
    assert _reach_from_cart(pods, objects=[chaos("DNSChaos", "dns", spec)]) is None


def _start(pod: dict[str, Any], service: str = "recommendationservice") -> Any:
    docs = manifests(OB)
    shot = world(TOPOLOGY, docs, now=10.0, pods=[pod])
    view = shot.pods[service][0]
    spec = view.containers[0]
    registry = ImageRegistry(TOPOLOGY)
    build = registry.lookup(spec.image)
    return start_failure(
        service=TOPOLOGY.service(service),
        spec=spec,
        build=build,
        pod=view,
        effects=chaos_effects.effects(shot),
    )


def test_a_cleared_required_address_crashes_the_container_at_start() -> None:
    pod = pod_of(running_pods(manifests(OB)), "recommendationservice")
    assert _start(pod) is None
    set_env(pod, "PRODUCT_CATALOG_SERVICE_ADDR", None)
    failure = _start(pod)
    assert failure is not None and failure.cause == "missing_config"
    assert failure.var == "PRODUCT_CATALOG_SERVICE_ADDR"


def test_a_memory_limit_below_the_base_working_set_is_an_oom_kill_at_start() -> None:
    pod = pod_of(running_pods(manifests(OB)), "recommendationservice")
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32Mi"
    failure = _start(pod)
    assert failure is not None and failure.reason == "OOMKilled"


def test_a_readiness_probe_on_a_port_nobody_listens_on_never_passes() -> None:
    pod = pod_of(running_pods(manifests(OB)), "shippingservice")
    assert probe_ok(container_spec(pod["spec"]["containers"][0]))
    pod["spec"]["containers"][0]["readinessProbe"]["grpc"]["port"] = 50052
    assert not probe_ok(container_spec(pod["spec"]["containers"][0]))


def test_the_model_finds_the_first_cleared_required_variable_of_every_service_as_start_failure_does() -> None:
    """The model keeps each service's required variables; clearing any one of them in any service's pod is
    the failure ``start_failure`` works out from the service itself."""
    built, _book = model(OB)
    docs = manifests(OB)
    effects = chaos_effects.effects(world(TOPOLOGY, docs, now=10.0))
    checked = 0
    for service in TOPOLOGY.services:
        for var in sorted({*service.address_env, *service.credential_env}):
            pods = running_pods(docs)
            pod = pod_of(pods, service.name)
            set_env(pod, var, None)
            view = world(TOPOLOGY, docs, now=10.0, pods=pods).pods[service.name][0]
            spec = view.container(service.container_name)
            assert spec is not None
            built.effects = effects
            expected = start_failure(
                service=service, spec=spec, build=built.registry.lookup(spec.image), pod=view, effects=effects
            )
            assert expected is not None
            assert built.start_failure_of(view, spec.name) == (expected.reason, expected.cause, expected.var)
            checked += 1
    assert checked > 10
