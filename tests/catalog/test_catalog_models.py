from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from orchestrator.catalog.faults import FAULT_ENTRY, interference_keys


def _entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "ob-payment-image-missing",
        "app": "online-boutique",
        "category": "deployment",
        "mechanism": "config",
        "target": "paymentservice",
        "culprits": ["paymentservice"],
        "artifact": "release:paymentservice@v0.10.7",
        "description": "paymentservice is rolled to a tag the registry does not have",
        "intended_update": "roll paymentservice forward",
        "defect": "v0.10.7 was never pushed",
        "log": {"service": "paymentservice", "message": "Failed to pull image"},
        "probe": {"query": 'up{namespace="$namespace"}', "healthy": {"op": ">=", "value": 1}},
        "remedy": {"action": "rollback", "service": "paymentservice"},
        "inject": {"field": "image", "value": "registry.example/paymentservice:v0.10.7"},
    }
    entry.update(changes)
    return entry


def _release() -> dict[str, Any]:
    return _entry(
        id="ob-payment-card-prefix",
        category="code-bug",
        mechanism="code",
        artifact="release:paymentservice@v0.10.6-1",
        inject={
            "image_tag": "v0.10.6-1",
            "change_cause": "payment: prefix check",
            "release_note": "One dependency less.",
            "behaviour": {"error_ratio": 0.5},
            "source": {"file": "charge.js", "before": "a", "after": "b"},
        },
    )


def test_a_missing_image_tag_and_a_fault_build_of_one_workload_interfere() -> None:
    missing = FAULT_ENTRY.validate_python(_entry())
    build = FAULT_ENTRY.validate_python(_release())
    assert "slot:paymentservice/image" in interference_keys(missing) & interference_keys(build)


@pytest.mark.parametrize(
    ("inject", "message"),
    [
        ({"field": "targetPort", "value": 50052}, "belongs to a service, not a deployment"),
        ({"object": "service", "field": "replicas", "value": 0}, "belongs to a deployment or a statefulset"),
        ({"object": "deployment", "field": "flags/paymentFailure", "value": "on"}, "belongs to a configmap"),
        ({"object": "statefulset", "field": "targetPort", "value": 50052}, "belongs to a service"),
    ],
)
def test_a_config_field_must_belong_to_the_object_it_changes(inject: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FAULT_ENTRY.validate_python(_entry(inject=inject))
