"""The twin's API server lets in only the holder of the kubeconfig's token, as a kube-apiserver whose
anonymous access is limited to the public-info endpoints: everything else without it is a 401 Status."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.twin.api.support import NAMESPACE, LiveServer

# The token every twin's kubeconfig carried before tokens were drawn per twin.
OLD_TOKEN = "twin-admin-token"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
GUARDED = [
    ("GET", "/api"),
    ("GET", "/apis"),
    ("GET", "/api/v1"),
    ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods"),
    ("GET", "/api/v1/namespaces/kube-system"),
    ("GET", "/apis/apps/v1/deployments"),
    ("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/cart"),
    ("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods"),
    ("PATCH", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/cart/scale"),
    ("GET", "/openapi/v3"),
    ("GET", "/no/such/path"),
]
WRONG = {
    "no token": {},
    "a wrong token": {"Authorization": "Bearer not-the-token"},
    "the old guessable token": {"Authorization": f"Bearer {OLD_TOKEN}"},
    "a bearer without a token": {"Authorization": "Bearer"},
}


@pytest.mark.parametrize("who", sorted(WRONG))
def test_every_kubernetes_path_but_public_info_answers_401_without_the_kubeconfig_token(
    server: LiveServer, who: str
) -> None:
    before = server.cluster.store.resource_version
    with httpx.Client(
        base_url=server.url, headers=WRONG[who], verify=server.credentials.ssl_context()
    ) as http:
        for method, path in GUARDED:
            answer = http.request(
                method,
                path,
                content=b'{"spec": {"replicas": 0}}',
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert (answer.status_code, answer.json()) == (401, UNAUTHORIZED), f"{method} {path}"
    assert server.cluster.store.resource_version == before  # nothing was written
    assert server.cluster.store.deletions == 0


def test_the_token_is_checked_whole_and_only_as_a_bearer(server: LiveServer) -> None:
    token = server.credentials.token
    verify = server.credentials.ssl_context()
    refused = [
        {"Authorization": f"Bearer {token[:-1]}"},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": token},
    ]
    for headers in refused:
        assert httpx.get(f"{server.url}/api/v1", headers=headers, verify=verify).status_code == 401
    # The scheme is case-insensitive, as the API server reads it.
    lower = {"Authorization": f"bearer {token}"}
    assert httpx.get(f"{server.url}/api/v1", headers=lower, verify=verify).status_code == 200


def test_public_info_paths_answer_anyone_as_a_default_kube_apiserver_does(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, verify=server.credentials.ssl_context()) as http:
        assert http.get("/version").json()["major"] == "1"
        for path in ("/healthz", "/livez", "/readyz"):
            answer = http.get(path)
            assert (answer.status_code, answer.text) == (200, "ok")


def test_the_official_client_gets_in_with_the_kubeconfig_and_not_with_another_token(
    server: LiveServer, tmp_path: Path
) -> None:
    api = config.new_client_from_config(config_file=str(server.kubeconfig))
    pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
    assert len(pods) == 4
    document = yaml.safe_load(server.kubeconfig.read_text(encoding="utf-8"))
    document["users"][0]["user"]["token"] = OLD_TOKEN
    (tmp_path / "guessed").write_text(yaml.safe_dump(document), encoding="utf-8")
    guessed = config.new_client_from_config(config_file=str(tmp_path / "guessed"))
    with pytest.raises(ApiException) as refused:
        client.CoreV1Api(guessed).list_namespaced_pod(NAMESPACE)
    assert refused.value.status == 401


def test_the_twin_is_served_over_tls_that_trusts_only_its_own_ca(server: LiveServer) -> None:
    cluster = yaml.safe_load(server.kubeconfig.read_text(encoding="utf-8"))["clusters"][0]["cluster"]
    assert server.url.startswith("https://") and cluster["server"] == server.url
    assert "insecure-skip-tls-verify" not in cluster and cluster["certificate-authority-data"]
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{server.url}/version")  # the system's CAs do not vouch for it


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_gets_in_with_the_kubeconfig_and_is_refused_with_the_old_token(
    server: LiveServer, tmp_path: Path
) -> None:
    def kubectl(kubeconfig: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
             "get", "pods", "-o", "name"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    allowed = kubectl(server.kubeconfig)
    assert allowed.returncode == 0, allowed.stderr
    assert len(allowed.stdout.split()) == 4
    document = yaml.safe_load(server.kubeconfig.read_text(encoding="utf-8"))
    document["users"][0]["user"]["token"] = OLD_TOKEN
    (tmp_path / "guessed").write_text(yaml.safe_dump(document), encoding="utf-8")
    refused = kubectl(tmp_path / "guessed")
    assert refused.returncode != 0
    assert "provide credentials" in refused.stderr or "Unauthorized" in refused.stderr
