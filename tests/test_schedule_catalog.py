"""A fixture catalog with every category, several mechanisms and deliberate interference, for schedule tests.

Other schedule tests and the schedule bench import ``fixture_entries`` from here.
"""

from __future__ import annotations

from typing import Any

from orchestrator.catalog.faults import FAULT_ENTRY, Category, Entry, interference_keys

APP = "online-boutique"
SERVICES = (
    "frontend", "cartservice", "productcatalogservice", "currencyservice", "paymentservice",
    "shippingservice", "emailservice", "checkoutservice", "recommendationservice", "adservice",
)  # fmt: skip


def _common(catalog_id: str, category: Category, target: str, artifact: str, app: str) -> dict[str, Any]:
    return {
        "id": catalog_id,
        "app": app,
        "category": category.value,
        "target": target,
        "culprits": [target],
        "artifact": artifact,
        "description": f"fixture fault {catalog_id} on {target}",
        "log": {"service": target, "message": f"fixture failure reported by {target}"},
        "probe": {"query": "up", "healthy": {"op": ">", "value": 0.5}},
        "remedy": {"action": "rollback", "service": target},
    }


def _code(catalog_id: str, target: str, tag: str, app: str) -> dict[str, Any]:
    return {
        **_common(catalog_id, Category.CODE_BUG, target, f"release:{target}@{tag}", app),
        "mechanism": "code",
        "intended_update": "refactor the request handler",
        "defect": "a nil result is dereferenced",
        "inject": {
            "image_tag": tag,
            "change_cause": "refactor the request handler",
            "release_note": "handler refactored for clarity",
            "behaviour": {"error_ratio": 0.3},
            "source": {"file": "main.go", "before": "if x != nil {", "after": "if true {"},
        },
    }


def _config(
    catalog_id: str, category: Category, target: str, artifact: str, field: str, value: Any, app: str
) -> dict[str, Any]:
    return {
        **_common(catalog_id, category, target, artifact, app),
        "mechanism": "config",
        "intended_update": "tune the deployment settings",
        "defect": "the new setting breaks the service",
        "inject": {"field": field, "value": value},
    }


def _chaos(
    catalog_id: str, category: Category, target: str, artifact: str, kind: str, spec: dict[str, Any], app: str
) -> dict[str, Any]:
    return {
        **_common(catalog_id, category, target, artifact, app),
        "mechanism": "chaos",
        "inject": {"kind": kind, "spec": spec},
    }


# Per service: (suffix, category, artifact, field, value) of config faults, and
# (suffix, category, artifact, kind, spec) of chaos faults; ``{s}`` is the service.
_CONFIGS: tuple[tuple[str, Category, str, str, Any], ...] = (
    ("bad-port", Category.CONFIGURATION_BUG, "config:{s}/env/PORT", "env/PORT", "1"),
    (
        "memory-limit",
        Category.CONFIGURATION_BUG,
        "resources:{s}/limits/memory",
        "resources/limits/memory",
        "8Mi",
    ),
    ("zero-replicas", Category.DEPLOYMENT, "replicas:{s}", "replicas", 0),
    ("missing-image", Category.DEPLOYMENT, "release:{s}@missing", "image", "no-such-image:1"),
    ("wrong-token", Category.AUTHENTICATION, "credentials:{s}/env/API_TOKEN", "env/API_TOKEN", "expired"),
)
_CHAOS: tuple[tuple[str, Category, str, str, dict[str, Any]], ...] = (
    ("pod-kill", Category.INFRASTRUCTURE, "pod:{s}", "PodChaos", {"action": "pod-kill"}),
    ("cpu-stress", Category.INFRASTRUCTURE, "cpu:{s}", "StressChaos", {"stressors": {"cpu": {"workers": 2}}}),
    # Delay and loss on one target share the NetworkChaos slot.
    ("net-delay", Category.DATABASE_NETWORK, "network:{s}", "NetworkChaos", {"action": "delay"}),
    ("net-loss", Category.DATABASE_NETWORK, "network:{s}->redis-cart", "NetworkChaos", {"action": "loss"}),
)
_DEPENDENCIES = (
    ("redis-cart", "partition", "network", "NetworkChaos"),
    ("redis-cart", "pod-failure", "pod", "PodChaos"),
    ("currency-api", "error", "dns", "DNSChaos"),
)


def fixture_entries(app: str = APP, *, services: tuple[str, ...] = SERVICES) -> list[Entry]:
    """Entries for ``app``: per service one or two of each kind, some pairs sharing interference keys."""
    raw: list[dict[str, Any]] = []
    for s in services:
        # Two releases of one Deployment share the image slot, so they can never be active together.
        raw.append(_code(f"{s}-release-nil", s, "v2-nil", app))
        raw.append(_code(f"{s}-release-loop", s, "v2-loop", app))
        for suffix, category, artifact, field, value in _CONFIGS:
            raw.append(_config(f"{s}-{suffix}", category, s, artifact.format(s=s), field, value, app))
        for suffix, category, artifact, kind, spec in _CHAOS:
            raw.append(_chaos(f"{s}-{suffix}", category, s, artifact.format(s=s), kind, spec, app))
    for dep, action, artifact, kind in _DEPENDENCIES:
        raw.append(
            _chaos(
                f"{dep}-{action}",
                Category.DEPENDENCY,
                dep,
                f"{artifact}:{dep}",
                kind,
                {"action": action},
                app,
            )
        )
    return [FAULT_ENTRY.validate_python(item) for item in raw]


def test_the_fixture_catalog_covers_every_category_and_validates() -> None:
    entries = fixture_entries()
    assert {entry.category for entry in entries} == set(Category)
    assert len({entry.id for entry in entries}) == len(entries)


def test_the_fixture_catalog_holds_pairs_that_interfere() -> None:
    by_id = {entry.id: entry for entry in fixture_entries()}
    releases = interference_keys(by_id["cartservice-release-nil"]) & interference_keys(
        by_id["cartservice-release-loop"]
    )
    network = interference_keys(by_id["frontend-net-delay"]) & interference_keys(by_id["frontend-net-loss"])
    assert releases == {"slot:cartservice/image"}
    assert network == {"slot:frontend/chaos/NetworkChaos"}
