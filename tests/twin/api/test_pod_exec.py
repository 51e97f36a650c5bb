"""pods/exec on the twin, through the official client's ``stream`` (WebSocket, channel.k8s.io protocols):
a command runs in the container's sandbox with its environment and files, its output on its channels and
its exit code in the closing status; interactive stdin and v5's close of stdin work as on a cluster."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import time
from typing import Any

import pytest
import websocket
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL

from tests.twin.api.support import NAMESPACE, LiveServer, run, run_kubectl

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SETTINGS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cart-settings", "namespace": NAMESPACE},
    "data": {"settings.yaml": "cache: redis:6379\nttl: 30\n", "LOG_LEVEL": "debug"},
}
TOKEN = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "cart-token", "namespace": NAMESPACE},
    "data": {"token": "czNjcjN0"},
}
LOG_LEVEL = {"configMapKeyRef": {"name": "cart-settings", "key": "LOG_LEVEL"}}
MOUNTED = {
    "volumes": [
        {"name": "settings", "configMap": {"name": "cart-settings"}},
        {"name": "token", "secret": {"secretName": "cart-token"}},
        {"name": "scratch", "emptyDir": {}},
    ],
    "containers": [
        {
            "name": "server",
            "env": [
                {"name": "LOG_LEVEL", "valueFrom": LOG_LEVEL},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ],
            "volumeMounts": [
                {"name": "settings", "mountPath": "/etc/cart"},
                {"name": "token", "mountPath": "/var/run/token", "readOnly": True},
                {"name": "scratch", "mountPath": "/scratch"},
            ],
        }
    ],
}


@pytest.fixture
def core(server: LiveServer) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(server.kubeconfig)))


def _running_pod(core: client.CoreV1Api, server: LiveServer, app: str) -> str:
    for _ in range(40):
        pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={app}").items
        ready = [p.metadata.name for p in pods if p.status.phase == "Running"]
        if ready:
            return str(sorted(ready)[0])
        with server.cluster.lock:
            run(server.cluster, 5)
    raise AssertionError(f"no running pod of {app}")


def _exec(core: client.CoreV1Api, pod: str, command: list[str], **options: Any) -> Any:
    settings = {"stderr": True, "stdin": False, "stdout": True, "tty": False, **options}
    return stream(core.connect_get_namespaced_pod_exec, pod, NAMESPACE, command=command, **settings)


def test_a_command_sees_the_containers_environment_and_hostname(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    pod = _running_pod(core, server, "frontend")
    env = dict(line.split("=", 1) for line in _exec(core, pod, ["env"]).splitlines() if "=" in line)
    assert env["PORT"] == "8080" and env["CART_ADDR"] == "cart:7070"  # the container's env, as written
    assert env["HOSTNAME"] == pod
    assert env["CART_SERVICE_PORT"] == "7070"  # the namespace's service links, as the kubelet sets them
    assert "KUBERNETES_SERVICE_HOST" in env
    assert _exec(core, pod, ["hostname"]).strip() == pod
    assert len(_exec(core, pod, ["/bin/sh", "-c", "for i in $(seq 1 3); do date; done"]).splitlines()) == 3


def test_mounted_configmaps_and_secrets_are_files_and_env_references_resolve(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    core.create_namespaced_config_map(NAMESPACE, SETTINGS)
    core.create_namespaced_secret(NAMESPACE, TOKEN)
    apps = client.AppsV1Api(core.api_client)
    patch = {"spec": {"template": {"spec": MOUNTED}}}
    apps.patch_namespaced_deployment("cart", NAMESPACE, patch)
    with server.cluster.lock:
        run(server.cluster, 60)
    pod = _running_pod(core, server, "cart")
    assert core.read_namespaced_pod(pod, NAMESPACE).spec.volumes  # the new revision's pod
    assert _exec(core, pod, ["cat", "/etc/cart/settings.yaml"]) == "cache: redis:6379\nttl: 30\n"
    assert _exec(core, pod, ["cat", "/var/run/token/token"]) == "s3cr3t"
    shown = _exec(
        core, pod, ["/bin/sh", "-c", 'echo "$LOG_LEVEL $POD_NAME"; touch /scratch/x && echo writable']
    )
    assert shown.splitlines() == [f"debug {pod}", "writable"]


def test_the_exit_code_comes_back_in_the_status(core: client.CoreV1Api, server: LiveServer) -> None:
    pod = _running_pod(core, server, "frontend")
    for command, code in ((["false"], 1), (["/bin/sh", "-c", "exit 3"], 3), (["true"], 0)):
        session = _exec(core, pod, command, _preload_content=False)
        session.run_forever(timeout=10)
        assert session.returncode == code, command


def test_an_interactive_shell_reads_stdin_and_answers_on_stdout_and_stderr(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    pod = _running_pod(core, server, "frontend")
    shell = stream(core.connect_post_namespaced_pod_exec, pod, NAMESPACE, command=["/bin/sh"], stderr=True,
                   stdin=True, stdout=True, tty=False, _preload_content=False)  # fmt: skip
    shell.write_stdin("echo one\n")
    assert shell.readline_stdout(timeout=10) == "one"
    shell.write_stdin("echo two >&2\n")
    assert shell.readline_stderr(timeout=10) == "two"
    shell.write_stdin("exit\n")
    deadline = time.monotonic() + 10
    status = ""
    while not status and time.monotonic() < deadline:
        shell.update(timeout=1)
        status = shell.read_channel(ERROR_CHANNEL)
    assert json.loads(status)["status"] == "Success"
    shell.update(timeout=5)
    assert not shell.is_open()


def test_closing_stdin_ends_a_command_that_reads_it(core: client.CoreV1Api, server: LiveServer) -> None:
    pod = _running_pod(core, server, "frontend")
    cat = stream(core.connect_post_namespaced_pod_exec, pod, NAMESPACE, command=["cat"], stderr=True,
                 stdin=True, stdout=True, tty=False, _preload_content=False)  # fmt: skip
    assert cat.subprotocol == "v5.channel.k8s.io"
    cat.write_stdin("echoed\n")
    assert cat.readline_stdout(timeout=10) == "echoed"
    cat.close_channel(0)
    cat.run_forever(timeout=15)
    assert not cat.is_open() and cat.returncode == 0


def test_the_sandbox_has_no_network_and_cannot_write_the_system(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    pod = _running_pod(core, server, "frontend")
    links = _exec(core, pod, ["cat", "/proc/net/dev"])
    assert [line.split(":")[0].strip() for line in links.splitlines()[2:]] == ["lo"]
    session = _exec(core, pod, ["/bin/sh", "-c", "touch /usr/x"], _preload_content=False)
    session.run_forever(timeout=10)
    assert session.returncode != 0


def test_exec_into_a_missing_pod_fails_with_its_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        _exec(core, "no-such-pod", ["env"])
    # Refused before the upgrade with a 404, as the API server refuses it (the client names the status).
    assert "404" in str(caught.value.reason)


def _kubectl(server: LiveServer, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_kubectl(shutil.which("kubectl"), server, *args, check=False, stdin=stdin)


def test_kubectl_exec_runs_the_command_passes_stdin_and_exits_with_its_code(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    pod = _running_pod(core, server, "cart")
    env = _kubectl(server, "exec", pod, "--", "env")
    assert env.returncode == 0, env.stderr
    assert f"HOSTNAME={pod}" in env.stdout.splitlines() and "PORT=8080" in env.stdout.splitlines()
    piped = _kubectl(server, "exec", "-i", pod, "--", "cat", stdin="through stdin\n")
    assert (piped.returncode, piped.stdout) == (0, "through stdin\n")
    failed = _kubectl(server, "exec", pod, "--", "sh", "-c", "exit 7")
    assert failed.returncode == 7 and "command terminated with exit code 7" in failed.stderr
    wrong = _kubectl(server, "exec", pod, "-c", "nope", "--", "env")
    assert wrong.returncode == 1
    assert (
        wrong.stderr.strip() == f"Error from server (BadRequest): container nope is not valid for pod {pod}"
    )


def test_an_exec_without_the_token_is_refused_before_the_upgrade(
    core: client.CoreV1Api, server: LiveServer
) -> None:
    pod = _running_pod(core, server, "frontend")
    url = (
        server.url.replace("https://", "wss://")
        + f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/exec?command=env"
    )
    with pytest.raises(websocket.WebSocketBadStatusException) as caught:
        websocket.create_connection(
            url, subprotocols=["v4.channel.k8s.io"], sslopt={"cert_reqs": ssl.CERT_NONE}
        )
    assert caught.value.status_code == 403
