"""A snapshot reuses the ConfigMaps' and Secrets' data of the last one while none of them has a new
resourceVersion, and reads them again as soon as one has."""

from __future__ import annotations

import base64
from typing import Any

from orchestrator.twin.model.state import ViewCache, _matches, endpoints, snapshot


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


def _workload(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": name}}}}


def _pod(name: str, app: str, version: int, *, ready: bool, tier: str = "web") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(version),
                     "labels": {"app": app, "tier": tier}},
        "spec": {"containers": [{"name": "main", "image": "img:1", "ports": [{"containerPort": 80}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip


def _service(name: str, version: int, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"svc-{name}", "resourceVersion": str(version)},
        "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 80}], "clusterIP": "10.96.0.9"},
    }


def test_endpoints_follow_every_change_of_pods_and_services_from_one_snapshot_to_the_next() -> None:
    """A snapshot shares the endpoint maps of the last one only while its pod and Service views are the same:
    each step of this history changes a pod's readiness or labels, a Service's selector, or nothing, and the
    endpoints are those of a snapshot made without a cache."""
    workloads = [_workload("a"), _workload("b")]
    history: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    pods = [
        _pod("a-1", "a", 1, ready=True),
        _pod("a-2", "a", 1, ready=False),
        _pod("b-1", "b", 1, ready=True),
    ]
    services = [_service("a", 1, {"app": "a"}), _service("b", 1, {"app": "b"})]
    history.append((pods, services))
    history.append((pods, services))  # nothing changed
    pods = [pods[0], _pod("a-2", "a", 2, ready=True), pods[2]]
    history += [(pods, services), (pods, services)]
    pods = [pods[0], pods[1], _pod("b-1", "b", 2, ready=True, tier="db")]
    services = [services[0], _service("b", 2, {"app": "b", "tier": "web"})]
    history += [(pods, services), (pods, services)]
    services = [services[0], _service("b", 3, {"app": "b"})]
    history.append((pods, services))
    pods = pods[:1] + pods[2:]
    history += [(pods, services), (pods, [services[0]]), (pods, services)]
    cache = ViewCache()
    for step, (listed, svcs) in enumerate(history):
        args: dict[str, Any] = {"namespace": "ns", "now": float(step), "workloads": workloads, "pods": listed,
                                "services": svcs, "configmaps": [], "secrets": [], "chaos": []}  # fmt: skip
        cached, fresh = snapshot(**args, cache=cache), snapshot(**args)
        assert cached.services == fresh.services
        for name in ("a", "b"):
            assert [p.name for p in endpoints(cached, name)] == [p.name for p in endpoints(fresh, name)], step
