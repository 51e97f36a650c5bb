"""A served twin's control API and trace queries want the same token as its Kubernetes API; every twin
draws its own token from the OS (never from the seed) into an owner-only kubeconfig, and names itself by a
kube-system uid of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.twin.apiserver.kubeconfig import read_credentials
from orchestrator.twin.launch import RunningTwin, start_twin
from tests.twin.api.test_authentication import OLD_TOKEN, UNAUTHORIZED
from tests.twin.twin_support import OB

pytestmark = pytest.mark.slow

CONTROL = [
    ("POST", "/twin/v1/advance"),
    ("GET", "/twin/v1/status"),
    ("GET", "/api/services"),
    ("GET", "/api/traces?service=frontend"),
]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningTwin, RunningTwin]]:
    """Two twins of the same app and the same seed."""
    first = start_twin(OB, seed=3, kubeconfig=tmp_path_factory.mktemp("first") / "kubeconfig")
    try:
        second = start_twin(OB, seed=3, kubeconfig=tmp_path_factory.mktemp("second") / "kubeconfig")
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {OLD_TOKEN}"}],
    ids=["no token", "a wrong token", "the old guessable token"],
)
def test_the_control_api_and_trace_queries_answer_401_without_the_token(
    twins: tuple[RunningTwin, RunningTwin], headers: dict[str, str]
) -> None:
    twin = twins[0]
    now = twin.twin.now
    with httpx.Client(base_url=twin.url, headers=headers, verify=twin.credentials.ssl_context()) as http:
        for method, path in CONTROL:
            answer = http.request(method, path, json={"seconds": 60})
            assert (answer.status_code, answer.json()) == (401, UNAUTHORIZED), f"{method} {path}"
    assert twin.twin.now == now  # the refused advance moved nothing


def test_the_control_api_and_trace_queries_answer_the_kubeconfig_token(
    twins: tuple[RunningTwin, RunningTwin],
) -> None:
    twin = twins[0]
    credentials = read_credentials(twin.kubeconfig)
    with httpx.Client(
        base_url=twin.url, headers=credentials.headers, verify=credentials.ssl_context(), timeout=60
    ) as http:
        moved = http.post("/twin/v1/advance", json={"seconds": 30})
        assert moved.status_code == 200 and moved.json()["now"] == twin.twin.now
        assert http.get("/twin/v1/status").json()["namespace"] == OB
        assert "frontend" in http.get("/api/services").json()["data"]
        assert http.get("/api/traces", params={"service": "frontend"}).status_code == 200


def test_a_twin_presents_only_its_own_token(twins: tuple[RunningTwin, RunningTwin]) -> None:
    first, second = twins
    other = {"Authorization": f"Bearer {second.credentials.token}"}
    verify = first.credentials.ssl_context()
    answer = httpx.get(f"{first.url}/api/v1/namespaces", headers=other, verify=verify)
    assert answer.status_code == 401


def test_twins_of_one_seed_get_distinct_random_tokens_in_owner_only_kubeconfigs(
    twins: tuple[RunningTwin, RunningTwin],
) -> None:
    tokens = [read_credentials(twin.kubeconfig).token for twin in twins]
    assert tokens[0] != tokens[1]
    assert all(len(token) >= 40 and token != OLD_TOKEN for token in tokens)
    for twin in twins:
        assert twin.kubeconfig.stat().st_mode & 0o777 == 0o600
        assert read_credentials(twin.kubeconfig) == twin.credentials
    assert [p.name for p in twins[0].kubeconfig.parent.iterdir()] == ["kubeconfig"]  # no partial file left


def test_each_twin_names_itself_by_a_kube_system_uid_that_lasts_and_differs_between_twins(
    twins: tuple[RunningTwin, RunningTwin], tmp_path: Path
) -> None:
    uids = []
    for twin in twins:
        kube = KubeClient.from_kubeconfig(twin.kubeconfig)
        try:
            first = kube.read(ObjectRef("Namespace", "", "kube-system"))["metadata"]["uid"]
            twin.advance(60)
            labels = {"metadata": {"labels": {"touched": "yes"}}}
            kube.core.patch_namespace("kube-system", labels)
            assert kube.read(ObjectRef("Namespace", "", "kube-system"))["metadata"]["uid"] == first
        finally:
            kube.close()
        assert first == twin.twin.cluster.identity
        uids.append(first)
    assert uids[0] != uids[1]
    # A copied kubeconfig reaches the same cluster, and so the same identity.
    copy = tmp_path / "copied"
    copy.write_text(twins[0].kubeconfig.read_text(encoding="utf-8"), encoding="utf-8")
    kube = KubeClient.from_kubeconfig(copy)
    try:
        assert kube.read(ObjectRef("Namespace", "", "kube-system"))["metadata"]["uid"] == uids[0]
    finally:
        kube.close()


def test_kube_system_cannot_be_deleted_so_the_identity_outlives_any_client(
    twins: tuple[RunningTwin, RunningTwin],
) -> None:
    twin = twins[1]
    credentials = twin.credentials
    for name in ("kube-system", "default", "kube-public"):
        answer = httpx.delete(
            f"{twin.url}/api/v1/namespaces/{name}",
            headers=credentials.headers,
            verify=credentials.ssl_context(),
        )
        assert answer.status_code == 403, name
        message = f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        assert answer.json()["message"] == message
    kube = KubeClient.from_kubeconfig(twin.kubeconfig)
    try:
        system = kube.read(ObjectRef("Namespace", "", "kube-system"))
        assert system["metadata"]["uid"] == twin.twin.cluster.identity
    finally:
        kube.close()

