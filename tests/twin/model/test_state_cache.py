"""A snapshot reuses the ConfigMaps' and Secrets' data of the last one while none of them has a new
resourceVersion, and reads them again as soon as one has."""

from __future__ import annotations

import base64
from typing import Any

from orchestrator.twin.model.state import ViewCache, _matches, snapshot


def _shot(cache: ViewCache, configmaps: list[dict[str, Any]], secrets: list[dict[str, Any]]) -> Any:
    return snapshot(
        namespace="ns", now=0.0, workloads=[], pods=[], services=[], configmaps=configmaps, secrets=secrets,
        chaos=[], cache=cache,
    )  # fmt: skip


def _object(name: str, version: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "data": data}


def test_config_data_are_read_again_only_when_a_resource_version_moves() -> None:
    cache = ViewCache()
    password = base64.b64encode(b"s3cret").decode()
    config, secret = _object("cfg", "7", mode="fast"), _object("db", "8", password=password)
    first = _shot(cache, [config], [secret])
    again = _shot(cache, [config], [secret])
    assert first.secrets == again.secrets == {"db": {"password": "s3cret"}}
    assert again.configmaps["cfg"] is first.configmaps["cfg"]
    changed = _object("db", "9", password=base64.b64encode(b"other").decode())
    after = _shot(cache, [config], [changed])
    assert after.secrets == {"db": {"password": "other"}}
    assert after.configmaps == {"cfg": {"mode": "fast"}}
    assert _shot(ViewCache(), [config], [changed]).secrets == after.secrets


def test_a_selector_matches_labels_holding_all_its_pairs() -> None:
    assert _matches({"app": "a"}, {"app": "a", "tier": "x"})
    assert not _matches({"app": "a", "tier": "y"}, {"app": "a", "tier": "x"})
    assert not _matches({}, {"app": "a"})
    assert not _matches({"app": "a"}, {})
