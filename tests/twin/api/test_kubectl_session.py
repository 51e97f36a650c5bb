"""An operator's kubectl session against the twin, with the newest kubectl on the machine: the verbs whose
requests a real kube-apiserver reads in ways the twin first did not (protobuf bodies, OpenAPI schemas,
strict field validation, self access reviews, event ages on the wall clock), and the streaming ones (logs -f,
exec, port-forward)."""

from __future__ import annotations

import json
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from orchestrator.twin import timefmt
from orchestrator.twin.apiserver import protobuf
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.resources import by_plural
from orchestrator.twin.store import DEPLOYMENTS, NAMESPACES, PODS
from tests.twin.api.support import (
    NAMESPACE,
    NODES,
    LiveServer,
    ScriptedRuntime,
    forwarding,
    http_get,
    run,
    run_kubectl,
    serving,
    shop_manifests,
)
from tests.twin.twin_support import OB


def _newest_kubectl() -> str | None:
    """kubectl 1.32+ when installed beside the one on PATH (a version dispatcher picks the server's minor,
    whose clients still send JSON), else the one on PATH."""
    found = shutil.which("kubectl")
    if found is None:
        return None
    real = Path(found).resolve()
    for minor in range(40, 31, -1):
        sibling = real.with_name(f"kubectl.1.{minor}")
        if sibling.is_file():
            return str(sibling)
    return found


CONFIGMAPS, SECRETS = by_plural("", "configmaps"), by_plural("", "secrets")
KUBECTL = _newest_kubectl()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


def _minor() -> int:
    assert KUBECTL is not None
    shown = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True, text=True)
    return int(re.sub(r"\D", "", json.loads(shown.stdout)["clientVersion"]["minor"]) or 0)


def kubectl(server: LiveServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_kubectl(KUBECTL, server, *args, check=check)


def test_create_sends_protobuf_bodies_the_twin_stores_as_their_json_form(server: LiveServer) -> None:
    made = kubectl(
        server, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=0", "--port=80", "-v=8"
    )
    assert "deployment.apps/web created" in made.stdout
    if _minor() >= 32:  # the typed clients of 1.32 encode built-in kinds as protobuf
        assert "Content-Type: application/vnd.kubernetes.protobuf" in made.stderr
    kubectl(server, "create", "configmap", "flags", "--from-literal=mode=fast", "--from-literal=empty=")
    kubectl(server, "create", "namespace", "staging")
    kubectl(server, "create", "secret", "generic", "db", "--from-literal=password=hunter2")
    store = server.cluster.store
    assert CONFIGMAPS is not None and SECRETS is not None
    web = store.get(DEPLOYMENTS, NAMESPACE, "web")
    assert web["spec"]["replicas"] == 0  # an explicit zero survives decoding
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"][0]["containerPort"]) == ("nginx:1.27", 80)
    # Zero values Go's JSON leaves out stay out (hostPort: 0, stdin: false), as on a kube-apiserver.
    assert "hostPort" not in container["ports"][0] and "stdin" not in container
    assert web["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    assert store.get(CONFIGMAPS, NAMESPACE, "flags")["data"] == {"mode": "fast", "empty": ""}
    assert store.get(SECRETS, NAMESPACE, "db")["data"] == {"password": "aHVudGVyMg=="}
    assert store.get(NAMESPACES, "", "staging")["metadata"]["name"] == "staging"
    assert kubectl(server, "get", "ns", "staging", "--no-headers").stdout.split()[:2] == ["staging", "Active"]


def _field(number: int, payload: bytes) -> bytes:
    assert number < 16 and len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_a_protobuf_body_decodes_to_the_json_object_and_unknown_kinds_are_415() -> None:
    meta = _field(1, b"flags") + _field(3, b"shop")
    entry = _field(1, b"mode") + _field(2, b"fast")
    config_map = _field(1, meta) + _field(2, entry)
    type_meta = _field(1, b"v1") + _field(2, b"ConfigMap")
    body = protobuf.MAGIC + _field(1, type_meta) + _field(2, config_map)
    assert protobuf.decode(body) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "flags", "namespace": "shop"},
        "data": {"mode": "fast"},
    }
    chaos = protobuf.MAGIC + _field(1, _field(1, b"chaos-mesh.org/v1alpha1") + _field(2, b"PodChaos"))
    with pytest.raises(Exception, match="unknown format") as refused:
        protobuf.decode(chaos)
    assert getattr(refused.value, "code", None) == 415


def test_explain_reads_the_official_schemas(server: LiveServer) -> None:
    replicas = kubectl(server, "explain", "deployment.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in replicas and "Number of desired pods" in replicas
    assert (
        "FIELD: maxSurge <IntOrString>"
        in kubectl(server, "explain", "deploy.spec.strategy.rollingUpdate.maxSurge").stdout
    )
    resources = kubectl(server, "explain", "pod.spec.containers.resources").stdout
    assert "limits\t<map[string]Quantity>" in resources
    assert "FIELD: data <map[string]string>" in kubectl(server, "explain", "configmap.data").stdout
    svc = kubectl(server, "explain", "svc.spec", "--recursive").stdout
    assert "clusterIP\t<string>" in svc and "targetPort\t<IntOrString>" in svc


def test_openapi_documents_carry_the_official_schemas(server: LiveServer) -> None:
    credentials = server.credentials
    with httpx.Client(
        base_url=server.url, headers=credentials.headers, verify=credentials.ssl_context()
    ) as http:
        index = http.get("/openapi/v3").json()["paths"]
        assert {"api/v1", "apis/apps/v1", "apis/batch/v1"} <= set(index)
        apps = http.get(index["apis/apps/v1"]["serverRelativeURL"]).json()
        deployment = apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
        assert deployment["x-kubernetes-group-version-kind"] == [
            {"group": "apps", "kind": "Deployment", "version": "v1"}
        ]
        assert deployment["properties"]["spec"]["allOf"] == [
            {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}
        ]
        v2 = http.get("/openapi/v2", headers={"Accept": "application/json"}).json()
        assert v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["$ref"] == (
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        )
        # Go clients ask for gnostic's protobuf form (kubectl before 1.29 cannot do without it).
        asked = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        proto = http.get("/openapi/v2", headers={"Accept": asked})
        assert proto.status_code == 200
        assert proto.headers["content-type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        assert proto.content.startswith(b"\n\x032.0") and b"io.k8s.api.apps.v1.Deployment" in proto.content


def test_explain_from_the_openapi_v2_document(server: LiveServer) -> None:
    shown = kubectl(
        server, "explain", "deploy.spec.strategy.rollingUpdate", "--output=plaintext-openapiv2"
    ).stdout
    assert "RESOURCE: rollingUpdate <Object>" in shown and "maxSurge\t<string>" in shown
    limits = kubectl(
        server, "explain", "pod.spec.containers.resources.limits", "--output=plaintext-openapiv2"
    )
    assert "FIELD:    limits <map[string]string>" in limits.stdout


BAD = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  foo: 1
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec:
      containers:
      - {name: c, image: nginx, bogus: true}
"""


def test_strict_field_validation_refuses_unknown_fields_warn_drops_them(
    server: LiveServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(BAD)
    refused = kubectl(server, "apply", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.foo", unknown field "spec.template.spec.containers[0].bogus"'
    ) in refused.stderr
    assert server.cluster.store.find(DEPLOYMENTS, NAMESPACE, "bad") is None
    warned = kubectl(server, "apply", "--validate=warn", "-f", str(manifest))
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    assert 'Warning: unknown field "spec.template.spec.containers[0].bogus"' in warned.stderr
    stored = server.cluster.store.get(DEPLOYMENTS, NAMESPACE, "bad")
    assert "foo" not in stored["spec"] and "bogus" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_field_validation_over_http(server: LiveServer) -> None:
    credentials = server.credentials
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "datta": {"a": "b"}}
    url = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    with httpx.Client(
        base_url=server.url, headers=credentials.headers, verify=credentials.ssl_context()
    ) as http:
        strict = http.post(url, params={"fieldValidation": "Strict"}, json=config_map)
        assert strict.status_code == 400 and strict.json()["reason"] == "BadRequest"
        assert strict.json()["message"].endswith('strict decoding error: unknown field "datta"')
        warn = http.post(url, json=config_map)  # Warn is the default
        assert warn.status_code == 201 and "datta" not in warn.json()
        assert warn.headers.get_list("warning") == ['299 - "unknown field \\"datta\\""']
        ignored = http.post(
            url, params={"fieldValidation": "Ignore"}, json={**config_map, "metadata": {"name": "y"}}
        )
        assert (
            ignored.status_code == 201 and "warning" not in ignored.headers and "datta" not in ignored.json()
        )
        wrong = http.post(url, params={"fieldValidation": "Loose"}, json=config_map)
        assert wrong.status_code == 400


def test_auth_can_i_and_whoami_answer_for_the_administrator(server: LiveServer) -> None:
    assert kubectl(server, "auth", "can-i", "create", "deployments").stdout.strip() == "yes"
    assert kubectl(server, "auth", "can-i", "delete", "pods", "-n", "kube-system").stdout.strip() == "yes"
    assert kubectl(server, "auth", "can-i", "get", "/healthz").stdout.strip() == "yes"
    rules = kubectl(server, "auth", "can-i", "--list").stdout.splitlines()
    assert rules[1].split() == ["*.*", "[]", "[]", "[*]"]
    who = kubectl(server, "auth", "whoami").stdout
    assert re.search(r"Username\s+twin-admin", who) and "system:masters" in who


@pytest.fixture
def wall_clock_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """A twin whose epoch is a minute before the wall clock, as ``marathon twin serve`` starts one."""
    monkeypatch.setattr(timefmt, "EPOCH", (datetime.now(UTC) - timedelta(seconds=60)).replace(microsecond=0))
    made = Cluster(seed=11, nodes=NODES, runtime=ScriptedRuntime())
    made.apply_manifests(shop_manifests())
    run(made, 20)
    with serving(made, tmp_path) as live:
        yield live


def test_describe_pod_shows_events_aged_on_the_wall_clock(wall_clock_server: LiveServer) -> None:
    text = kubectl(wall_clock_server, "describe", "pod", "-l", "app=cart").stdout
    events = text.split("\nEvents:\n", 1)[1].splitlines()[2:]
    ages = {line.split()[1]: line.split()[2] for line in events if line.strip()}
    assert {"Scheduled", "Pulling", "Pulled", "Created", "Started"} <= set(ages)
    for reason, age in ages.items():
        assert re.fullmatch(r"(\d+s|\d+m\d*s?)", age), (reason, age)  # seconds or minutes, never days


FLAGS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: flags
  labels: {{team: shop}}
data:
  mode: {mode}
  owner: {owner}
"""


def test_server_side_apply_keeps_managed_fields_and_refuses_another_managers_field(
    server: LiveServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "flags.yaml"
    manifest.write_text(FLAGS.format(mode="fast", owner="alice"))
    applied = kubectl(server, "apply", "--server-side", "--field-manager=alice", "-f", str(manifest))
    assert "configmap/flags serverside-applied" in applied.stdout
    manifest.write_text(FLAGS.format(mode="safe", owner="alice"))
    refused = kubectl(
        server, "apply", "--server-side", "--field-manager=bob", "-f", str(manifest), check=False
    )
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "alice": .data.mode' in refused.stderr
    assert kubectl(server, "get", "cm", "flags", "-o", "jsonpath={.data.mode}").stdout == "fast"
    manifest.write_text(FLAGS.format(mode="fast", owner="alice"))  # the same values: co-owned, no conflict
    kubectl(server, "apply", "--server-side", "--field-manager=bob", "-f", str(manifest))
    manifest.write_text(FLAGS.format(mode="safe", owner="alice"))
    kubectl(server, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", str(manifest))
    shown = json.loads(kubectl(server, "get", "cm", "flags", "--show-managed-fields", "-o", "json").stdout)
    assert shown["data"]["mode"] == "safe"
    fields = {e["manager"]: e for e in shown["metadata"]["managedFields"]}
    assert set(fields) == {"alice", "bob"} and {e["operation"] for e in fields.values()} == {"Apply"}
    assert "f:mode" not in fields["alice"]["fieldsV1"]["f:data"]  # taken over by the forced apply
    assert set(fields["bob"]["fieldsV1"]["f:data"]) == {"f:mode", "f:owner"}
    # A field whose only manager stops applying it is removed; one another manager applies stays.
    manifest.write_text(FLAGS.format(mode="safe", owner="alice") + "  extra: bob\n")
    kubectl(server, "apply", "--server-side", "--field-manager=bob", "-f", str(manifest))
    manifest.write_text(FLAGS.format(mode="safe", owner="alice").replace("  owner: alice\n", ""))
    kubectl(server, "apply", "--server-side", "--field-manager=bob", "-f", str(manifest))
    data = json.loads(kubectl(server, "get", "cm", "flags", "-o", "json").stdout)["data"]
    assert data == {"mode": "safe", "owner": "alice"}
    created = kubectl(server, "create", "configmap", "plain", "--from-literal=a=b")
    assert created.returncode == 0
    plain = json.loads(kubectl(server, "get", "cm", "plain", "--show-managed-fields", "-o", "json").stdout)
    assert [(e["manager"], e["operation"]) for e in plain["metadata"]["managedFields"]] == [
        ("kubectl-create", "Update")
    ]


@pytest.fixture(scope="module")
def boutique(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTwin]:
    """A stepped twin of the online boutique with its app model, two minutes in."""
    running = start_twin(OB, seed=5, kubeconfig=tmp_path_factory.mktemp("boutique") / "kubeconfig")
    try:
        running.advance(120)
        yield running
    finally:
        running.stop()


def _run(twin: RunningTwin, *args: str) -> str:
    assert KUBECTL is not None
    cache = twin.kubeconfig.parent / "kube-cache"
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(twin.kubeconfig), "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_top_reports_the_models_cpu_and_working_set(boutique: RunningTwin) -> None:
    rows = [line.split() for line in _run(boutique, "top", "pods", "-n", OB).splitlines()]
    assert rows[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    shown = {row[0]: (int(row[1].rstrip("m")), int(row[2].rstrip("Mi"))) for row in rows[1:]}
    with boutique.twin.cluster.lock:
        usage = dict(boutique.twin.model.usage)
        pods = [p["metadata"]["name"] for p in boutique.twin.cluster.store.list(PODS, OB)]
    assert set(shown) == set(pods) and len(shown) > 5
    for pod, (millicores, mebibytes) in shown.items():
        cores = sum(u.cores for (name, _c), u in usage.items() if name == pod)
        memory = sum(u.working_set for (name, _c), u in usage.items() if name == pod)
        assert abs(millicores - cores * 1000) <= 1, pod
        assert abs(mebibytes - memory / 2**20) <= 1, pod
    assert any(millicores > 0 for millicores, _m in shown.values())
    containers = _run(boutique, "top", "pods", "-n", OB, "-l", "app=frontend", "--containers").splitlines()
    assert containers[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert [line.split()[1] for line in containers[1:]] == ["server"]
    nodes = _run(boutique, "top", "nodes").splitlines()
    assert nodes[0].split()[:3] == ["NAME", "CPU(cores)", "CPU(%)"] and len(nodes) > 1


def test_logs_follow_streams_the_lines_the_twin_writes(boutique: RunningTwin) -> None:
    assert KUBECTL is not None
    cache = boutique.kubeconfig.parent / "kube-cache"
    follower = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(boutique.kubeconfig), "--cache-dir", str(cache), "-n", OB]
        + ["logs", "-f", "deploy/frontend", "--tail=0", "--timestamps"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    received: queue.Queue[str] = queue.Queue()
    assert follower.stdout is not None
    stdout = follower.stdout
    threading.Thread(target=lambda: [received.put(line) for line in stdout], daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + 60
    start = boutique.twin.now
    try:
        while len(lines) < 3 and time.monotonic() < deadline and follower.poll() is None:
            boutique.advance(5)  # the stepped world writes logs only as it moves
            try:
                while True:
                    lines.append(received.get(timeout=0.5))
            except queue.Empty:
                pass
    finally:
        follower.terminate()
        follower.wait(timeout=10)
    assert len(lines) >= 3, follower.stderr.read() if follower.stderr else ""
    stamps = [timefmt.parse_rfc3339(line.split(" ", 1)[0]) for line in lines]
    assert all(t >= start for t in stamps) and stamps == sorted(stamps)  # only new lines, in order


def test_diff_shows_only_what_the_write_would_change(server: LiveServer, tmp_path: Path) -> None:
    live = kubectl(server, "get", "deploy", "cart", "-o", "yaml").stdout
    manifest = tmp_path / "cart.yaml"
    manifest.write_text(live.replace("replicas: 1", "replicas: 2"))  # status.replicas too: a write ignores it
    shown = kubectl(server, "diff", "-f", str(manifest), check=False)
    assert shown.returncode == 1, shown.stderr  # 1: differences found
    changed = sorted(
        line for line in shown.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )
    assert changed == ["+  generation: 2", "+  replicas: 2", "-  generation: 1", "-  replicas: 1"]


def test_scaling_takes_replicas_from_the_applier(server: LiveServer, tmp_path: Path) -> None:
    live = json.loads(kubectl(server, "get", "deploy", "cart", "-o", "json").stdout)
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cart"},
        "spec": {"replicas": 1, "selector": live["spec"]["selector"], "template": live["spec"]["template"]},
    }
    manifest = tmp_path / "cart.json"
    manifest.write_text(json.dumps(config))
    kubectl(server, "apply", "--server-side", "--field-manager=gitops", "-f", str(manifest))
    kubectl(server, "scale", "deploy/cart", "--replicas=3")
    again = kubectl(
        server, "apply", "--server-side", "--field-manager=gitops", "-f", str(manifest), check=False
    )
    assert again.returncode == 1
    assert re.search(
        r'conflict with "[^"]+" with subresource "scale" using apps/v1 at \S+Z: \.spec\.replicas',
        again.stderr,
    )
    assert kubectl(server, "get", "deploy", "cart", "-o", "jsonpath={.spec.replicas}").stdout == "3"


def test_exec_runs_env_in_the_container(server: LiveServer) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("exec needs bubblewrap")
    shown = kubectl(server, "exec", "deploy/cart", "--", "env").stdout.splitlines()
    assert "PORT=8080" in shown and any(line.startswith("HOSTNAME=cart-") for line in shown)


def test_port_forward_to_a_service_returns_its_health(server: LiveServer) -> None:
    with forwarding(KUBECTL, server, "svc/frontend", "80") as port:
        assert http_get(port) == (200, "ok\n")
