"""Fixtures for the twin's Kubernetes side: a small shop cluster, its runtime, a live server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from orchestrator.twin.cluster import Cluster
from tests.twin.api.support import NODES, LiveServer, ScriptedRuntime, run, serving, shop_manifests


@pytest.fixture
def runtime() -> ScriptedRuntime:
    return ScriptedRuntime()


@pytest.fixture
def cluster(runtime: ScriptedRuntime) -> Cluster:
    made = Cluster(seed=11, nodes=NODES, runtime=runtime)
    made.apply_manifests(shop_manifests())
    run(made, 20)
    return made


@pytest.fixture
def server(cluster: Cluster, tmp_path: Path) -> Iterator[LiveServer]:
    with serving(cluster, tmp_path) as live:
        yield live


@pytest.fixture
def api(server: LiveServer) -> client.ApiClient:
    """The official client, configured from the served twin's kubeconfig."""
    return config.new_client_from_config(config_file=str(server.kubeconfig))
