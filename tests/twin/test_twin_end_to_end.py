"""The twin under the official Kubernetes client, kubectl and a real Prometheus: symptoms from state."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from orchestrator.telemetry.server import PrometheusServer
from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import CHECKOUT_ERRORS, HOME_P99, OB, prometheus, query, served

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    yield from prometheus(tmp_path_factory.mktemp("prom"))


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory, prom: PrometheusServer) -> Iterator[RunningTwin]:
    running = served(tmp_path_factory.mktemp("twin"), remote_write_url=prom.remote_write_url)
    try:
        running.advance(300)
        yield running
    finally:
        running.stop()


def _api(twin: RunningTwin) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(twin.kubeconfig))


def _set_redis(api: client.ApiClient, value: str) -> None:
    body = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "server", "env": [{"name": "REDIS_ADDR", "value": value}]}]}
            }
        }
    }
    client.AppsV1Api(api).patch_namespaced_deployment("cartservice", OB, body)


def _cart_logs(api: client.ApiClient) -> str:
    core = client.CoreV1Api(api)
    pods = core.list_namespaced_pod(OB, label_selector="app=cartservice").items
    return "".join(
        core.read_namespaced_pod_log(p.metadata.name, OB, container="server", tail_lines=50)
        for p in pods
        if p.metadata.deletion_timestamp is None
    )


def test_every_pod_of_online_boutique_runs_and_is_ready(twin: RunningTwin) -> None:
    pods = client.CoreV1Api(_api(twin)).list_namespaced_pod(OB).items
    assert len(pods) == 12
    assert {p.status.phase for p in pods} == {"Running"}
    assert all(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions) for p in pods)


def test_a_wrong_redis_port_fails_checkout_and_a_rollback_repairs_it(
    twin: RunningTwin, prom: PrometheusServer
) -> None:
    api = _api(twin)
    before = query(prom, CHECKOUT_ERRORS.format(w="2m"), at=twin.twin.now)
    assert before < 0.01
    _set_redis(api, "redis-cart:6380")
    now = twin.advance(120)
    broken = query(prom, CHECKOUT_ERRORS.format(w="2m"), at=now)
    assert broken > 0.2
    assert "It was not possible to connect to the redis server(s)" in _cart_logs(api)
    if shutil.which("kubectl"):
        done = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                str(twin.kubeconfig),
                "-n",
                OB,
                "rollout",
                "undo",
                "deployment/cartservice",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    else:
        _set_redis(api, "redis-cart:6379")
    now = twin.advance(180)
    assert query(prom, CHECKOUT_ERRORS.format(w="2m"), at=now) < 0.01


def test_kubectl_set_env_breaks_the_cart_too(
    twin: RunningTwin, prom: PrometheusServer, tmp_path: Path
) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    kubectl = ["kubectl", "--kubeconfig", str(twin.kubeconfig), "-n", OB]
    done = subprocess.run(
        [*kubectl, "set", "env", "deployment/cartservice", "REDIS_ADDR=redis-cart:6380"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    now = twin.advance(120)
    assert query(prom, CHECKOUT_ERRORS.format(w="2m"), at=now) > 0.2
    done = subprocess.run(
        [*kubectl, "rollout", "undo", "deployment/cartservice"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    now = twin.advance(180)
    assert query(prom, CHECKOUT_ERRORS.format(w="2m"), at=now) < 0.01
    del tmp_path


def test_network_delay_on_the_catalog_raises_home_page_p99_until_deleted(
    twin: RunningTwin, prom: PrometheusServer
) -> None:
    api = _api(twin)
    custom = client.CustomObjectsApi(api)
    now = twin.advance(120)
    baseline = query(prom, HOME_P99.format(w="2m"), at=now)
    chaos = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "NetworkChaos",
        "metadata": {"name": "catalog-delay", "namespace": OB},
        "spec": {
            "action": "delay",
            "mode": "all",
            "direction": "to",
            "selector": {"namespaces": [OB], "labelSelectors": {"app": "productcatalogservice"}},
            "delay": {"latency": "500ms", "jitter": "0ms"},
        },
    }
    custom.create_namespaced_custom_object("chaos-mesh.org", "v1alpha1", OB, "networkchaos", chaos)
    now = twin.advance(150)
    delayed = query(prom, HOME_P99.format(w="2m"), at=now)
    assert delayed - baseline >= 400
    custom.delete_namespaced_custom_object("chaos-mesh.org", "v1alpha1", OB, "networkchaos", "catalog-delay")
    now = twin.advance(150)
    restored = query(prom, HOME_P99.format(w="2m"), at=now)
    assert restored < baseline + 100
