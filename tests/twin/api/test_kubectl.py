"""Real kubectl against the twin with the kubeconfig it writes: the subcommands an operator reaches for."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from orchestrator.twin.store import REPLICASETS
from tests.twin.api.support import NAMESPACE, LiveServer, run, run_kubectl

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


def kubectl(server: LiveServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_kubectl(KUBECTL, server, *args, check=check)


def advance(server: LiveServer, seconds: float) -> None:
    with server.cluster.lock:
        run(server.cluster, seconds)


def test_get_lists_pods_deployments_and_nodes(server: LiveServer) -> None:
    pods = kubectl(server, "get", "pods").stdout.splitlines()
    assert pods[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert len(pods) == 5 and all(line.split()[1:3] == ["1/1", "Running"] for line in pods[1:])
    deploy = kubectl(server, "get", "deploy", "frontend", "-o", "wide").stdout
    assert "2/2" in deploy and "shop/frontend:1.0" in deploy
    nodes = kubectl(server, "get", "nodes").stdout
    assert nodes.count("Ready") == 3
    everything = kubectl(server, "get", "all", "-A").stdout
    assert "service/frontend" in everything and "replicaset.apps/cart-" in everything


def test_describe_pod_shows_containers_conditions_and_events(server: LiveServer) -> None:
    text = kubectl(server, "describe", "pod", "-l", "app=cart").stdout
    assert "Controlled By:  ReplicaSet/cart-" in text
    assert "Readiness:" in text and "http-get http://:8080/healthz" in text
    for reason in ("Scheduled", "Pulling", "Pulled", "Created", "Started"):
        assert reason in text
    described = kubectl(server, "describe", "deploy", "cart").stdout
    assert "NewReplicaSetAvailable" in described and "ScalingReplicaSet" in described
    endpoints = [
        line
        for line in kubectl(server, "describe", "svc", "cart").stdout.splitlines()
        if line.startswith("Endpoints:")
    ]
    assert endpoints and endpoints[0].split()[1].startswith("10.244.") and endpoints[0].endswith(":8080")
    assert kubectl(server, "get", "ns", "shop", "--no-headers").stdout.split()[1] == "Active"


def test_logs_of_a_pod_and_of_a_deployment(server: LiveServer) -> None:
    pod = kubectl(server, "get", "pods", "-l", "app=cart", "-o", "name").stdout.strip()
    name = pod.split("/", 1)[1]
    for second, line in ((11.0, "boot"), (12.0, "ready on :8080")):
        server.cluster.logbook.append(namespace=NAMESPACE, pod=name, container="server", t=second, line=line)
    assert kubectl(server, "logs", pod).stdout == "boot\nready on :8080\n"
    assert kubectl(server, "logs", "deploy/cart", "--tail=1").stdout == "ready on :8080\n"
    previous = kubectl(server, "logs", pod, "--previous", check=False)
    assert previous.returncode != 0 and "previous terminated container" in previous.stderr


def test_scale_changes_the_number_of_pods(server: LiveServer) -> None:
    assert "scaled" in kubectl(server, "scale", "deploy/frontend", "--replicas=3").stdout
    advance(server, 15)
    lines = kubectl(server, "get", "pods", "-l", "app=frontend", "--no-headers").stdout.splitlines()
    assert len(lines) == 3 and all("Running" in line for line in lines)


def test_set_env_history_and_undo_return_to_the_first_replicaset(server: LiveServer) -> None:
    first = {rs["metadata"]["name"] for rs in server.cluster.store.list(REPLICASETS, NAMESPACE)}
    kubectl(server, "set", "env", "deploy/cart", "CART_ADDR=cart:9999")
    advance(server, 30)
    history = kubectl(server, "rollout", "history", "deploy/cart").stdout.split()
    assert history[-4:] == ["1", "<none>", "2", "<none>"]
    assert "rolled back" in kubectl(server, "rollout", "undo", "deploy/cart").stdout
    advance(server, 30)
    sets = kubectl(
        server,
        "get",
        "rs",
        "-l",
        "app=cart",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}",
    ).stdout.split()
    active = [s.split("=")[0] for s in sets if not s.endswith("=0")]
    assert len(active) == 1 and active[0] in first  # the old ReplicaSet is reused, now as revision 3
    env = kubectl(server, "set", "env", "deploy/cart", "--list").stdout
    assert "CART_ADDR=cart:7070" in env
    assert kubectl(server, "rollout", "history", "deploy/cart").stdout.split()[-4:] == [
        "2",
        "<none>",
        "3",
        "<none>",
    ]


def test_set_image_to_a_missing_image_shows_image_pull_backoff(server: LiveServer) -> None:
    kubectl(server, "set", "image", "deploy/cart", "server=shop/cart:does-not-exist")
    advance(server, 15)
    pods = kubectl(server, "get", "pods", "-l", "app=cart", "--no-headers").stdout
    assert "ImagePullBackOff" in pods or "ErrImagePull" in pods
    assert "1/1" in pods  # the old pod keeps serving: maxUnavailable rounds down to 0


def test_rollout_status_follows_a_rollout_to_its_end(server: LiveServer) -> None:
    kubectl(server, "set", "image", "deploy/frontend", "server=shop/frontend:1.1")
    assert KUBECTL is not None
    waiting = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(server.kubeconfig),
            "--cache-dir",
            str(server.kubeconfig.parent / "c"),
            "rollout",
            "status",
            "deploy/frontend",
            "--timeout=60s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(200):  # the world moves only when stepped: step until kubectl has seen the end
        if waiting.poll() is not None:
            break
        advance(server, 5)
        time.sleep(0.1)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert 'deployment "frontend" successfully rolled out' in out


def test_delete_pod_is_immediate_and_the_replicaset_replaces_it(server: LiveServer) -> None:
    pod = kubectl(server, "get", "pods", "-l", "app=redis", "-o", "name").stdout.strip()
    assert "deleted" in kubectl(server, "delete", pod).stdout
    assert kubectl(server, "get", "pods", "-l", "app=redis", "-o", "name").stdout.strip() == ""
    advance(server, 5)
    replacement = kubectl(server, "get", "pods", "-l", "app=redis", "-o", "name").stdout.strip()
    assert replacement and replacement != pod


def test_apply_creates_a_chaos_experiment_and_delete_removes_it(server: LiveServer, tmp_path: Path) -> None:
    manifest = tmp_path / "chaos.yaml"
    manifest.write_text(
        "apiVersion: chaos-mesh.org/v1alpha1\nkind: PodChaos\nmetadata:\n  name: kill-cart\n"
        "spec:\n  action: pod-kill\n  mode: one\n  selector:\n    labelSelectors: {app: cart}\n"
    )
    assert "created" in kubectl(server, "apply", "-f", str(manifest)).stdout
    assert "kill-cart" in kubectl(server, "get", "podchaos").stdout
    assert "deleted" in kubectl(server, "delete", "-f", str(manifest)).stdout


def test_server_side_apply_creates_then_updates(server: LiveServer, tmp_path: Path) -> None:
    manifest = tmp_path / "flags.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\ndata:\n  cartFailure: 'off'\n"
    )
    assert "serverside-applied" in kubectl(server, "apply", "--server-side", "-f", str(manifest)).stdout
    manifest.write_text(manifest.read_text().replace("'off'", "'on'"))
    kubectl(server, "apply", "--server-side", "-f", str(manifest))
    value = kubectl(server, "get", "cm", "flags", "-o", "jsonpath={.data.cartFailure}").stdout
    assert value == "on"


def test_drain_evicts_pods_and_cordoned_nodes_get_no_new_ones(server: LiveServer) -> None:
    node = kubectl(
        server, "get", "pods", "-l", "app=redis", "-o", "jsonpath={.items[0].spec.nodeName}"
    ).stdout
    drained = kubectl(server, "drain", node, "--ignore-daemonsets", "--timeout=20s")
    assert "evicted" in drained.stdout and "drained" in drained.stdout
    on_node = f"spec.nodeName={node}"
    assert kubectl(server, "get", "pods", "-A", "--field-selector", on_node, "-o", "name").stdout == ""
    advance(server, 10)
    assert kubectl(server, "get", "pods", "-A", "--field-selector", on_node, "-o", "name").stdout == ""
    assert len(kubectl(server, "get", "pods", "--no-headers").stdout.splitlines()) == 4
    assert "Ready,SchedulingDisabled" in kubectl(server, "get", "node", node).stdout
    kubectl(server, "uncordon", node)
    assert "SchedulingDisabled" not in kubectl(server, "get", "node", node).stdout
