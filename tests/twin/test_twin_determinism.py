"""Same seed and same API calls in stepped mode give byte-identical metrics, logs and traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client, config

from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import OB, served

pytestmark = pytest.mark.slow

CHAOS: dict[str, Any] = {
    "apiVersion": "chaos-mesh.org/v1alpha1",
    "kind": "NetworkChaos",
    "metadata": {"name": "catalog-delay", "namespace": OB},
    "spec": {
        "action": "delay",
        "mode": "all",
        "selector": {"namespaces": [OB], "labelSelectors": {"app": "productcatalogservice"}},
        "delay": {"latency": "300ms", "jitter": "50ms"},
    },
}


def _session(twin: RunningTwin) -> dict[str, Any]:
    """Thirty simulated minutes with a config change, a chaos object and a rollback on the way."""
    api = config.new_client_from_config(config_file=str(twin.kubeconfig))
    apps, custom = client.AppsV1Api(api), client.CustomObjectsApi(api)
    twin.advance(600)
    body = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "server", "env": [{"name": "REDIS_ADDR", "value": "redis-cart:6380"}]}
                    ]
                }
            }
        }
    }
    apps.patch_namespaced_deployment("cartservice", OB, body)
    twin.advance(300)
    body["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "redis-cart:6379"
    apps.patch_namespaced_deployment("cartservice", OB, body)
    twin.advance(300)
    custom.create_namespaced_custom_object("chaos-mesh.org", "v1alpha1", OB, "networkchaos", CHAOS)
    twin.advance(300)
    custom.delete_namespaced_custom_object("chaos-mesh.org", "v1alpha1", OB, "networkchaos", "catalog-delay")
    twin.advance(300)
    core = client.CoreV1Api(api)
    logs = {}
    for pod in core.list_namespaced_pod(OB).items:
        for container in pod.spec.containers:
            logs[(pod.metadata.name, container.name)] = core.read_namespaced_pod_log(
                pod.metadata.name, OB, container=container.name, timestamps=True
            )
    traces = httpx.get(
        f"{twin.url}/api/traces",
        params={"service": "frontend", "limit": 200},
        headers=twin.credentials.headers,
        verify=twin.credentials.ssl_context(),
        timeout=30,
    ).json()
    return {
        "metrics": list(twin.twin.telemetry.samples),
        "digest": twin.twin.telemetry.digest,
        "logs": logs,
        "traces": traces,
    }


def _run(tmp: Path, seed: int) -> dict[str, Any]:
    twin = served(tmp, seed=seed, keep_samples=True)
    try:
        return _session(twin)
    finally:
        twin.stop()


def test_two_stepped_runs_with_the_same_seed_and_calls_are_byte_identical(tmp_path: Path) -> None:
    first = _run(tmp_path / "a", seed=42)
    second = _run(tmp_path / "b", seed=42)
    assert len(first["metrics"]) > 100_000
    assert "\n".join(first["metrics"]).encode() == "\n".join(second["metrics"]).encode()
    assert first["digest"] == second["digest"]
    assert first["logs"] == second["logs"]
    assert any("could not retrieve cart: rpc error" in text for text in first["logs"].values())
    assert first["traces"] == second["traces"]
    assert first["traces"]["data"]


def test_another_seed_gives_other_metrics(tmp_path: Path) -> None:
    twin = served(tmp_path, seed=43, keep_samples=True)
    try:
        twin.advance(600)
        other = twin.twin.telemetry.digest
    finally:
        twin.stop()
    twin = served(tmp_path / "again", seed=44, keep_samples=True)
    try:
        twin.advance(600)
        assert twin.twin.telemetry.digest != other
    finally:
        twin.stop()
