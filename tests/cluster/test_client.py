"""The cluster seam reads objects as the API server sent them: its timestamps in their RFC 3339 form and
its explicit nulls, not as the client's typed models would rewrite them; errors keep the server's words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.cluster.client import KubeClient, NotFound, ObjectRef
from orchestrator.cluster.fields import Patch
from orchestrator.errors import ClusterError
from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import OB, served


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTwin]:
    running = served(tmp_path_factory.mktemp("twin"))
    try:
        running.advance(60)
        yield running
    finally:
        running.stop()


@pytest.fixture
def kube(twin: RunningTwin) -> Iterator[KubeClient]:
    client = KubeClient.from_kubeconfig(twin.kubeconfig)
    try:
        yield client
    finally:
        client.close()


def test_an_object_keeps_the_servers_timestamps_and_nulls(kube: KubeClient) -> None:
    deployment = kube.read(ObjectRef("Deployment", OB, "frontend"))
    assert deployment["kind"] == "Deployment"
    assert deployment["metadata"]["creationTimestamp"].endswith("Z")
    pods = kube.list_pods(OB, selector="app=frontend")
    assert pods
    conditions = pods[0]["status"]["conditions"]
    assert all("lastProbeTime" in c and c["lastProbeTime"] is None for c in conditions)
    assert all(c["lastTransitionTime"].endswith("Z") for c in conditions)


def test_a_list_names_the_kind_of_its_items(kube: KubeClient) -> None:
    replicasets = kube.list_objects("ReplicaSet", namespace=OB, selector="app=frontend")
    assert replicasets and {rs["kind"] for rs in replicasets} == {"ReplicaSet"}


def test_a_missing_object_is_not_found(kube: KubeClient) -> None:
    with pytest.raises(NotFound, match="deployment/no-such-service in online-boutique: not found"):
        kube.read(ObjectRef("Deployment", OB, "no-such-service"))


def test_a_rejected_patch_carries_the_servers_reason(kube: KubeClient) -> None:
    bad = Patch("json", [{"op": "replace", "path": "/spec/replicas", "value": "many"}])
    with pytest.raises(ClusterError) as caught:
        kube.patch(ObjectRef("Deployment", OB, "frontend"), bad)
    message = str(caught.value)
    assert message.startswith("patch deployment/frontend in online-boutique: 400 Bad Request: ")
    assert 'spec.replicas: expected an integer, got \\"many\\"' in message
