from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from orchestrator.catalog.faults import FAULT_ENTRY, Artifact
from orchestrator.vocabulary.artifacts import ARTIFACT_GRAMMAR, ARTIFACT_KINDS

ACCEPTED = [
    ("release:checkoutservice@v0.10.6-1", {"workload": "checkoutservice", "tag": "v0.10.6-1"}),
    ("config:cartservice/env/REDIS_ADDR", {"workload": "cartservice"}),
    ("config:emailservice/port/grpc", {"workload": "emailservice"}),
    ("resources:currencyservice/limits/memory", {"workload": "currencyservice"}),
    ("resources:adservice/requests/cpu", {"workload": "adservice"}),
    ("replicas:paymentservice", {"workload": "paymentservice"}),
    ("probe:shippingservice/readiness", {"workload": "shippingservice"}),
    ("service:shippingservice/targetPort", {"service": "shippingservice"}),
    ("credentials:cartservice/env/REDIS_ADDR", {"workload": "cartservice"}),
    ("credentials:ts-auth-service/secret/mysql-credentials", {"workload": "ts-auth-service"}),
    ("feature-flag:paymentFailure", {"flag": "paymentFailure"}),
    ("network:cartservice->redis-cart", {"workload": "cartservice", "peer": "redis-cart"}),
    ("network:adservice", {"workload": "adservice"}),
    ("dns:checkoutservice", {"workload": "checkoutservice"}),
    ("pod:redis-cart", {"workload": "redis-cart"}),
    ("cpu:currencyservice", {"workload": "currencyservice"}),
    ("memory:recommendationservice", {"workload": "recommendationservice"}),
    ("io:redis-cart", {"workload": "redis-cart"}),
    ("node:marathon-worker2", {"node": "marathon-worker2"}),
    ("node:zone/zone-a", {"zone": "zone-a"}),
]

REJECTED = [
    "release:checkoutservice",  # no tag
    "release:checkoutservice:v1",  # ':' instead of '@'
    "config:cartservice/REDIS_ADDR",  # no env/ or port/
    "config:cartservice/env/REDIS-ADDR",  # not an env var name
    "resources:currencyservice/limits/disk",
    "resources:currencyservice/memory",
    "replicas:Payment_Service",
    "probe:shippingservice/startup",
    "service:shippingservice/nodePort",
    "credentials:cartservice/password",
    "feature-flag:-flag",
    "network:cartservice->",
    "network:cartservice<-redis-cart",
    "dns:",
    "pod:redis-cart/server",
    "node:zone/",
    "node:Worker_1",
]


def test_every_kind_has_an_accepted_example_here() -> None:
    assert {Artifact.parse(text).kind for text, _ in ACCEPTED} == set(ARTIFACT_KINDS)


@pytest.mark.parametrize(("text", "names"), ACCEPTED)
def test_a_canonical_artifact_is_accepted_and_its_names_extracted(text: str, names: dict[str, str]) -> None:
    assert Artifact.parse(text).names() == names


@pytest.mark.parametrize("text", REJECTED)
def test_a_malformed_reference_is_rejected_naming_the_expected_form(text: str) -> None:
    artifact = Artifact.parse(text)
    form = ARTIFACT_GRAMMAR[artifact.kind].form
    with pytest.raises(ValueError, match="does not follow the form") as raised:
        artifact.canonical()
    assert form in str(raised.value)


def test_a_bare_kind_parses_for_agents_but_is_not_a_catalog_reference() -> None:
    artifact = Artifact.parse("memory")
    assert artifact.normalized() == "memory"
    with pytest.raises(ValueError, match="memory:<workload>"):
        artifact.canonical()


def _chaos_entry(**inject: Any) -> dict[str, Any]:
    return {
        "id": "ob-grammar-case",
        "app": "online-boutique",
        "category": "infrastructure",
        "mechanism": "chaos",
        "target": "cartservice",
        "culprits": ["cartservice"],
        "artifact": "pod:cartservice",
        "description": "the cart pod is killed",
        "log": {"service": "frontend", "message": "could not retrieve cart"},
        "probe": {"query": 'up{namespace="$namespace"}', "healthy": {"op": ">=", "value": 1}},
        "remedy": {"action": "wait"},
        "inject": inject,
    }


def test_an_entry_with_a_malformed_artifact_is_invalid_at_the_artifact_field() -> None:
    entry = _chaos_entry(kind="PodChaos", spec={"action": "pod-kill"})
    entry["artifact"] = "pod:cartservice/server"
    with pytest.raises(ValidationError) as raised:
        FAULT_ENTRY.validate_python(entry)
    (error,) = raised.value.errors()
    assert error["loc"] == ("chaos", "artifact")
    assert "pod:<workload>" in error["msg"]


@pytest.mark.parametrize(
    ("inject", "message"),
    [
        ({"kind": "PodChaos", "spec": {"action": "pod-explode"}}, "pod-failure, pod-kill"),
        ({"kind": "HTTPChaos", "spec": {"port": 8080}}, "one of abort, delay, replace, patch"),
        ({"kind": "drain-node", "spec": {}}, "the 'node' to drain"),
        ({"kind": "drain-zone", "spec": {"zone": 3}}, "'zone' names a zone"),
        ({"kind": "StressChaos", "spec": {"mode": "all"}}, "needs 'stressors'"),
    ],
)
def test_a_chaos_recipe_must_say_what_it_does(inject: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FAULT_ENTRY.validate_python(_chaos_entry(**inject))


def test_an_http_chaos_recipe_needs_no_action() -> None:
    inject = {"kind": "HTTPChaos", "spec": {"port": 8080, "target": "Request", "abort": True}}
    entry = FAULT_ENTRY.validate_python({**_chaos_entry(**inject), "artifact": "network:cartservice"})
    assert entry.responsible.kind == "network"
