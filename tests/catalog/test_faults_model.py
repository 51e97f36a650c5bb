from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from orchestrator.catalog.faults import FAULT_ENTRY, Artifact, interference_keys


def _entry(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "ob-cart-redis-port",
        "app": "online-boutique",
        "category": "configuration-bug",
        "mechanism": "config",
        "target": "cartservice",
        "culprits": ["cartservice"],
        "artifact": "config:cartservice/env/REDIS_ADDR",
        "description": "cartservice points at a Redis port with no listener",
        "intended_update": "move the cart cache to the new Redis port",
        "defect": "nothing listens on 6380",
        "log": {"service": "cartservice", "message": "It was not possible to connect to the redis server(s)"},
        "probe": {"query": "up", "healthy": {"op": "<", "value": 0.05}},
        "remedy": {"action": "rollback", "service": "cartservice"},
        "inject": {"field": "env/REDIS_ADDR", "value": "redis-cart:6380"},
    }
    entry.update(overrides)
    return entry


def test_an_artifact_is_normalised_without_case_whitespace_or_registry_prefix() -> None:
    written = Artifact.parse(" Release:us-central1-docker.pkg.dev/ob-ci/demo/CartService@v0.10.6-2 ")
    assert written.normalized() == "release:cartservice@v0.10.6-2"
    assert Artifact.parse("memory").normalized() == "memory"


def test_an_unknown_artifact_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown artifact kind 'database'"):
        Artifact.parse("database:redis-cart")


def test_the_mechanism_selects_the_inject_recipe() -> None:
    entry = FAULT_ENTRY.validate_python(_entry())
    assert entry.mechanism == "config"
    with pytest.raises(ValidationError):
        FAULT_ENTRY.validate_python(_entry(mechanism="code"))


def test_a_chaos_artifact_on_a_config_fault_is_rejected() -> None:
    with pytest.raises(ValidationError, match="does not fit a config fault"):
        FAULT_ENTRY.validate_python(_entry(artifact="network:cartservice"))


def test_faults_on_different_fields_of_one_deployment_do_not_interfere() -> None:
    redis = FAULT_ENTRY.validate_python(_entry())
    memory = FAULT_ENTRY.validate_python(
        _entry(
            id="ob-cart-memory",
            artifact="resources:cartservice/limits/memory",
            inject={"field": "resources/limits/memory", "value": "16Mi"},
        )
    )
    assert not interference_keys(redis) & interference_keys(memory)
    assert interference_keys(redis) == interference_keys(FAULT_ENTRY.validate_python(_entry(id="ob-other")))


def test_a_nodes_drain_and_its_zones_drain_interfere_as_they_share_the_cordons() -> None:
    from orchestrator.catalog.loading import load_catalog

    by_id = load_catalog("astronomy-shop").by_id
    node, zone = by_id["as-active-site-node-drained"], by_id["as-active-site-outage"]
    assert node.responsible.normalized() != zone.responsible.normalized()
    assert interference_keys(node) & interference_keys(zone) == {"slot:nodes/cordon"}
    assert not interference_keys(zone) & interference_keys(by_id["as-cart-pods-terminated"])
