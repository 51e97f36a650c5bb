"""The run's Prometheus, which the agent's tools read, holds the application's namespace and nothing of
the others: with workloads, chaos objects and registry builds in chaos-mesh, monitoring, marathon,
marathon-registry and kube-system, no series the twin pushes names them, whatever the aggregation."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from orchestrator.cluster.client import KubeClient
from orchestrator.telemetry.server import PrometheusServer, start_prometheus
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.store import PODS
from orchestrator.twin.timefmt import EPOCH
from tests.twin.twin_support import OB

pytestmark = pytest.mark.slow

OTHERS = ("chaos-mesh", "monitoring", "marathon", "marathon-registry", "kube-system")
WORKLOADS = {
    "chaos-mesh": ("chaos-controller-manager", "ghcr.io/chaos-mesh/chaos-mesh:v2.6.3"),
    "monitoring": ("prometheus-server", "quay.io/prometheus/prometheus:v2.53.0"),
    "marathon": ("orchestrator", "marathon/orchestrator:1"),
    "kube-system": ("coredns", "registry.k8s.io/coredns/coredns:v1.11.1"),
}
MINUTES = 10


def _deployment(name: str, namespace: str, image: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        },
    }


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningTwin, PrometheusServer]]:
    """A twin that ran ten minutes with busy neighbours, pushing to its own Prometheus."""
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed")
    with start_prometheus(tmp_path_factory.mktemp("prometheus")) as server:
        twin = start_twin(
            OB,
            seed=8,
            kubeconfig=tmp_path_factory.mktemp("twin") / "kubeconfig",
            remote_write_url=server.remote_write_url,
        )
        kube = KubeClient.from_kubeconfig(twin.kubeconfig)
        try:
            for namespace in OTHERS:
                kube.ensure_namespace(namespace)
            for namespace, (name, image) in WORKLOADS.items():
                kube.create("Deployment", namespace=namespace, body=_deployment(name, namespace, image))
            build = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "build-1"}, "data": {}}
            kube.create("ConfigMap", namespace="marathon-registry", body=build)
            chaos = {
                "apiVersion": "chaos-mesh.org/v1alpha1",
                "kind": "NetworkChaos",
                "metadata": {"name": "cart-delay", "namespace": "chaos-mesh"},
                "spec": {
                    "action": "delay",
                    "mode": "all",
                    "selector": {"namespaces": [OB], "labelSelectors": {"app": "cartservice"}},
                    "delay": {"latency": "200ms"},
                },
            }
            kube.custom.create_namespaced_custom_object(
                "chaos-mesh.org", "v1alpha1", "chaos-mesh", "networkchaos", chaos
            )
            twin.advance(MINUTES * 60)
            yield twin, server
        finally:
            kube.close()
            twin.stop()


def _get(server: PrometheusServer, path: str, **params: Any) -> Any:
    answer = httpx.get(f"{server.url}{path}", params=params, timeout=30)
    answer.raise_for_status()
    return answer.json()["data"]


def _window(twin: RunningTwin) -> dict[str, str]:
    origin = EPOCH.timestamp()
    return {"start": f"{origin:.3f}", "end": f"{origin + twin.twin.now:.3f}"}


def test_the_neighbours_do_run_in_the_twin(pushed: tuple[RunningTwin, PrometheusServer]) -> None:
    twin, _server = pushed
    with twin.twin.cluster.lock:
        pods = twin.twin.cluster.store.list(PODS)
    namespaces = {pod["metadata"]["namespace"] for pod in pods}
    assert set(WORKLOADS) <= namespaces and OB in namespaces


@pytest.mark.parametrize(
    "aggregation",
    [
        'count by (namespace) ({__name__=~".+"})',
        "count by (namespace) (kube_pod_info)",
        f"count by (namespace) (max_over_time(kube_pod_container_status_restarts_total[{MINUTES + 1}m]))",
    ],
)
def test_an_aggregation_by_namespace_finds_only_the_application(
    pushed: tuple[RunningTwin, PrometheusServer], aggregation: str
) -> None:
    twin, server = pushed
    at = f"{EPOCH.timestamp() + twin.twin.now:.3f}"
    result = _get(server, "/api/v1/query", query=aggregation, time=at)["result"]
    found = {row["metric"].get("namespace") for row in result}
    # Node series carry no namespace at all; every namespaced one is the application's.
    assert OB in found
    assert found - {None} == {OB}


def test_at_every_scrape_of_the_run_the_namespaces_are_the_applications_alone(
    pushed: tuple[RunningTwin, PrometheusServer],
) -> None:
    twin, server = pushed
    every = 'count by (namespace) ({__name__=~".+"})'
    result = _get(server, "/api/v1/query_range", query=every, step="15", **_window(twin))["result"]
    assert {row["metric"].get("namespace") for row in result} - {None} == {OB}
    steps = max(len(row["values"]) for row in result)
    assert steps >= MINUTES * 4  # the whole run, not one instant


def test_no_label_of_any_series_names_another_namespace_or_its_pods(
    pushed: tuple[RunningTwin, PrometheusServer],
) -> None:
    twin, server = pushed
    assert _get(server, "/api/v1/label/namespace/values", **_window(twin)) == [OB]
    series = _get(server, "/api/v1/series", **{"match[]": '{__name__=~".+"}'}, **_window(twin))
    assert len(series) > 1000
    workloads = tuple(f"{name}-" for name, _image in WORKLOADS.values())  # their pods' names
    named = {
        (labels["__name__"], key, value)
        for labels in series
        for key, value in labels.items()
        if value in OTHERS or value.startswith(workloads)
    }
    assert named == set()
