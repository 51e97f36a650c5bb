"""Config faults on Train Ticket's StatefulSets through the real injector on a served twin: the ordered
rollout stops at a pod that cannot run, putting the field back does not free it (as in Kubernetes), and the
fault's revert does the forced rollback so the set is whole again; a set scaled to zero comes back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog.loading import load_catalog
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.cluster.fields import field_patch
from orchestrator.mechanisms.applying import Applied, Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import served

pytestmark = pytest.mark.slow
TT = "train-ticket"


@pytest.fixture
def twin(tmp_path: Path) -> Iterator[RunningTwin]:
    running = served(tmp_path / "twin", app=TT)
    try:
        running.advance(240)
        yield running
    finally:
        running.stop()


@pytest.fixture
def applier(twin: RunningTwin, tmp_path: Path) -> Iterator[Applier]:
    client = KubeClient.from_kubeconfig(twin.kubeconfig)
    ctx = Context(client=client, namespace=TT, chaos_namespace="chaos-mesh", settle=lambda: twin.advance(5))
    book = Ledger(tmp_path / "faults.ledger.jsonl")
    book.open(Target(kubeconfig=str(twin.kubeconfig), namespace=TT, chaos_namespace="chaos-mesh"))
    try:
        yield Applier(ctx=ctx, ledger=book)
    finally:
        book.close()
        client.close()


def _set(applier: Applier, name: str) -> dict[str, Any]:
    found: dict[str, Any] = applier.ctx.client.read(ObjectRef("StatefulSet", TT, name))
    return found


def _phases(applier: Applier, name: str) -> dict[str, str]:
    pods = applier.ctx.client.list_pods(TT, selector=f"app={name}")
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in pods}


def test_a_stuck_statefulset_rollout_is_freed_by_the_faults_revert(
    twin: RunningTwin, applier: Applier
) -> None:
    entry = load_catalog(TT).by_id["tt-nacos-memory-request-too-large"]
    assert _set(applier, "nacos")["status"]["readyReplicas"] == 3
    assert isinstance(applier.inject(entry, fault_id="nacos-t"), Applied)
    twin.advance(300)
    assert _phases(applier, "nacos") == {"nacos-0": "Running", "nacos-1": "Running", "nacos-2": "Pending"}
    assert _set(applier, "nacos")["status"]["readyReplicas"] == 2
    # An operator puts the request back: the set does not replace the Pending pod by itself.
    ref = ObjectRef("StatefulSet", TT, "nacos")
    fixed = field_patch(applier.ctx.client.read(ref), field="resources/requests/memory", value="1Gi")
    applier.ctx.client.patch(ref, fixed)
    twin.advance(300)
    assert _phases(applier, "nacos")["nacos-2"] == "Pending"
    assert applier.revert("nacos-t") == "already_restored"
    twin.advance(300)
    status = _set(applier, "nacos")["status"]
    assert _phases(applier, "nacos") == {f"nacos-{n}": "Running" for n in range(3)}
    assert status["readyReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"]


def test_a_statefulset_scaled_to_zero_comes_back_on_revert(twin: RunningTwin, applier: Applier) -> None:
    entry = load_catalog(TT).by_id["tt-nacosdb-scaled-to-zero"]
    assert isinstance(applier.inject(entry, fault_id="zero-t"), Applied)
    twin.advance(240)
    assert _phases(applier, "nacosdb-mysql") == {}
    assert applier.revert("zero-t") == "reverted"
    twin.advance(240)
    assert _set(applier, "nacosdb-mysql")["status"]["readyReplicas"] == 3
    assert sorted(_phases(applier, "nacosdb-mysql")) == [f"nacosdb-mysql-{n}" for n in range(3)]
