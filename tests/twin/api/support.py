"""Helpers of the twin API tests: a small shop, a runtime with scripted outcomes, a live server."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from kubernetes.client.rest import ApiException

from orchestrator.catalog.topology import Node
from orchestrator.twin.apiserver.app import build_app
from orchestrator.twin.apiserver.certificates import issue
from orchestrator.twin.apiserver.kubeconfig import Credentials, new_token, write_kubeconfig
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.runtime_protocol import ContainerVerdict
from orchestrator.twin.selectors import parse_label_selector
from orchestrator.twin.store import PODS

NAMESPACE = "shop"
NODES = (
    Node(name="worker-a1", zone="zone-a"),
    Node(name="worker-a2", zone="zone-a"),
    Node(name="worker-b1", zone="zone-b"),
)
GOOD_IMAGES = {"shop/frontend:1.0", "shop/frontend:1.1", "shop/cart:1.0", "redis:7.2", "shop/cart:1.1"}


@dataclass
class ScriptedRuntime:
    """Healthy unless told otherwise: unknown images fail to pull; images can crash, OOM or be unready."""

    known: set[str] = field(default_factory=lambda: set(GOOD_IMAGES))
    crashing: set[str] = field(default_factory=set)
    oom: set[str] = field(default_factory=set)
    unready: set[str] = field(default_factory=set)
    too_big: set[str] = field(default_factory=set)
    hung: set[str] = field(default_factory=set)
    calls: int = 0

    def verdict(self, pod: dict[str, Any], container: dict[str, Any], now: float) -> ContainerVerdict:
        self.calls += 1
        image = container["image"]
        if image in self.oom:
            return ContainerVerdict(exit_reason="OOMKilled", exit_message="java.lang.OutOfMemoryError")
        return ContainerVerdict(
            image_known=image in self.known,
            starts=image not in self.crashing,
            exit_reason="Error" if image in self.crashing else None,
            exit_message="panic: cannot connect to redis" if image in self.crashing else None,
            ready=image not in self.unready,
            schedulable=image not in self.too_big,
            live=image not in self.hung,
        )


def deployment(
    name: str, *, image: str, replicas: int = 1, probe: bool = True, **spec: Any
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "server",
        "image": image,
        "ports": [{"name": "http", "containerPort": 8080}],
        "env": [{"name": "PORT", "value": "8080"}, {"name": "CART_ADDR", "value": "cart:7070"}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"},
        },
    }
    if probe:
        container["readinessProbe"] = {
            "httpGet": {"path": "/healthz", "port": 8080},
            "initialDelaySeconds": 5,
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
            **spec,
        },
    }


def service(name: str, port: int = 80) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port, "targetPort": "http"}]},
    }


def shop_manifests() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        deployment("frontend", image="shop/frontend:1.0", replicas=2),
        service("frontend"),
        deployment("cart", image="shop/cart:1.0"),
        service("cart", 7070),
        deployment("redis", image="redis:7.2", probe=False),
        service("redis", 6379),
    ]


def fresh(runtime: ScriptedRuntime | None = None, *docs: dict[str, Any]) -> Cluster:
    made = Cluster(seed=5, nodes=NODES, runtime=runtime or ScriptedRuntime())
    made.apply_manifests([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, *docs])
    return made


def pods_of(cluster: Cluster, app: str) -> list[dict[str, Any]]:
    return cluster.store.list(PODS, NAMESPACE, labels=parse_label_selector(f"app={app}"))


def run(cluster: Cluster, seconds: float, *, step: float = 5.0) -> None:
    """Advance the cluster by ``seconds`` of simulated time in fixed steps."""
    end = cluster.now + seconds
    while cluster.now + 1e-9 < end:
        cluster.step(cluster.now + step)


@dataclass
class LiveServer:
    url: str
    kubeconfig: Path
    cluster: Cluster
    credentials: Credentials


@contextmanager
def serving(cluster: Cluster, tmp_path: Path) -> Iterator[LiveServer]:
    """The cluster's API over HTTPS on a free 127.0.0.1 port, served by uvicorn in a thread while the block
    runs, with a fresh token and CA in the kubeconfig it writes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    token = new_token()
    certificates = issue(now=datetime.now(UTC))
    with certificates.files() as (cert, key):
        config = uvicorn.Config(
            build_app(cluster, token=token),
            log_level="warning",
            timeout_graceful_shutdown=1,
            ws="wsproto",
            ssl_certfile=cert,
            ssl_keyfile=key,
        )
        uv = uvicorn.Server(config)
        thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not uv.started and time.monotonic() < deadline:
            time.sleep(0.01)
    url = f"https://127.0.0.1:{port}"
    credentials = Credentials(server=url, token=token, ca_pem=certificates.ca_pem)
    path = write_kubeconfig(tmp_path / "kubeconfig", credentials, namespace=NAMESPACE)
    try:
        yield LiveServer(url=url, kubeconfig=path, cluster=cluster, credentials=credentials)
    finally:
        uv.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def forwarding(kubectl: str | None, server: LiveServer, target: str, port: str) -> Iterator[int]:
    """``kubectl port-forward TARGET :PORT`` while the block runs; yields the local port kubectl chose."""
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    cache = str(server.kubeconfig.parent / "kc")
    command = [
        kubectl,
        "--kubeconfig",
        str(server.kubeconfig),
        "--cache-dir",
        cache,
        "port-forward",
        target,
        f":{port}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # kubectl prints this line once it listens
        found = re.search(r"Forwarding from 127\.0\.0\.1:(\d+) ->", line)
        assert found, (line, process.stderr.read() if process.stderr else "")
        yield int(found.group(1))
    finally:
        process.terminate()
        process.communicate(timeout=30)


def http_get(port: int, path: str = "/healthz") -> tuple[int, str]:
    """A GET to 127.0.0.1:``port``: the status and the body, errors included."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def run_kubectl(
    binary: str | None, server: LiveServer, *args: str, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl ``binary`` with the served twin's kubeconfig and a cache of its own (skips without kubectl);
    with ``check``, a non-zero exit fails the test with kubectl's stderr."""
    if binary is None:
        pytest.skip("kubectl is not on PATH")
    cache = server.kubeconfig.parent / "kube-cache"
    done = subprocess.run(
        [binary, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def api_error(call: Callable[[], object]) -> ApiException:
    """The ``ApiException`` ``call`` raises (the test fails if it raises none)."""
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value
