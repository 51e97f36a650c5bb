"""A run on a real cluster refuses to start, writing nothing, unless the cluster and its Prometheus answer."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ConfigError
from orchestrator.run.config import make_config
from orchestrator.run.runner import run_marathon
from orchestrator.twin.launch import start_twin
from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_VERSION


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _refused(tmp_path: Path, kubeconfig: Path, prometheus_url: str) -> ConfigError:
    config = make_config(
        app="online-boutique", seed=1, agent="noop", backend="kube", kubeconfig=kubeconfig,
        prometheus_url=prometheus_url, runs_root=tmp_path / "runs", quiet=True,
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        run_marathon(config)
    assert not (tmp_path / "runs").exists()  # nothing was written
    return caught.value


def test_a_file_that_is_not_a_kubeconfig_is_refused_naming_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "passwd"
    kubeconfig.write_text("root:x:0:0:root:/root:/bin/bash\n")
    error = _refused(tmp_path, kubeconfig, "http://127.0.0.1:9")
    assert [(p.field, p.value) for p in error.problems] == [("kubeconfig", str(kubeconfig))]
    assert "not a kubeconfig" in str(error)


def test_an_api_server_that_does_not_answer_is_refused(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{_closed_port()}'}}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    error = _refused(tmp_path, kubeconfig, "http://127.0.0.1:9")
    assert [p.field for p in error.problems] == ["kubeconfig"]
    assert "cannot reach the API server" in str(error)


def test_a_prometheus_that_is_not_ready_is_refused(tmp_path: Path) -> None:
    twin = start_twin("online-boutique", seed=1, kubeconfig=tmp_path / "twin.kubeconfig")
    try:
        error = _refused(tmp_path, twin.kubeconfig, f"http://127.0.0.1:{_closed_port()}")
    finally:
        twin.stop()
    assert [p.field for p in error.problems] == ["prometheus_url"]
    assert "not ready" in str(error)


def test_the_client_tells_whether_the_cluster_serves_chaos_mesh(tmp_path: Path) -> None:
    twin = start_twin("online-boutique", seed=1, kubeconfig=tmp_path / "twin.kubeconfig")
    client = KubeClient.from_kubeconfig(twin.kubeconfig)
    try:
        assert client.serves(CHAOS_GROUP, CHAOS_VERSION)
        assert not client.serves("chaos.example.org", "v1")
    finally:
        client.close()
        twin.stop()
