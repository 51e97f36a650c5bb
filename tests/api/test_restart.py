"""SIGKILL of ``marathon serve`` in the middle of a run: the worker and its twin die with the server, and
the restarted server marks the run interrupted, settles its revert ledger and seals what it journaled."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from orchestrator.api.registry import Registry
from orchestrator.bundle.verify import verify_bundle
from orchestrator.cluster.client import KubeClient
from orchestrator.mechanisms import ledger as ledger_module
from orchestrator.twin.apiserver.kubeconfig import read_credentials
from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_VERSION, CRD_KINDS
from tests.api.bundles import pending_in_ledger, unpack
from tests.api.cluster import separate_cluster
from tests.api.live import AUTH, Server, events, start_run
from tests.processes import alive


def _processes_under(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (the run's Prometheus, its twin, its agent)."""
    found = []
    needle = str(path).encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if needle in cmdline.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_a_run_of_a_killed_server_is_interrupted_on_restart_and_leaves_no_fault(tmp_path: Path) -> None:
    data = tmp_path / "control"
    first = Server(data=data).start()
    try:
        with first.client() as client:
            run_id = start_run(client, seed=5, schedule={"faults": 20, "injection_period_s": 2400,
                                                         "observation_period_s": 1200})  # fmt: skip
            live: set[str] = set()
            for event in events(client, run_id):
                if event["type"] == "injected":
                    live.add(event["fault_id"])
                elif event["type"] == "reverted":
                    live.discard(event["fault_id"])
                if live and event["type"] == "boundary":
                    break
        home = data / "runs" / run_id
        row = Registry(f"sqlite:///{data / 'registry.sqlite'}").get(run_id)
        assert row is not None and row.worker_pid is not None
        credentials = read_credentials(home / "run" / "kubeconfig")
        twin_url, verify = credentials.server, credentials.ssl_context()
        assert httpx.get(f"{twin_url}/version", timeout=5, verify=verify).status_code == 200
        ledger = home / "run" / "faults.ledger.jsonl"
        assert pending_in_ledger(ledger), "a fault was live when the server was killed"
    finally:
        first.kill9()

    deadline = time.monotonic() + 15
    while (alive(row.worker_pid) or _processes_under(home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(row.worker_pid)
    assert _processes_under(home) == []
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{twin_url}/version", timeout=5, verify=verify)

    second = Server(data=data).start()
    try:
        with second.client() as client:
            view = client.get(f"/runs/{run_id}").json()
            assert view["status"] == "interrupted"
            assert view["active_faults"] == []
            assert "settled" in view["recovery"] and "bundle sealed" in view["recovery"]
            replayed = [e["type"] for e in events(client, run_id, timeout=30)]
            assert replayed[0] == "started" and replayed[-1] == "interrupted"
            packed = client.get(f"/runs/{run_id}/bundle", headers=AUTH).content
            bundle = unpack(packed, tmp_path / "unpacked")
            assert verify_bundle(bundle).ok
        assert pending_in_ledger(ledger) == []
    finally:
        second.stop()


def _chaos_objects(kubeconfig: Path, plurals: set[str]) -> list[str]:
    client = KubeClient.from_kubeconfig(kubeconfig)
    try:
        return [
            f"{plural}/{item['metadata']['name']}"
            for plural in sorted(plurals)
            for item in client.custom.list_namespaced_custom_object(
                CHAOS_GROUP, CHAOS_VERSION, "chaos-mesh", plural
            )["items"]
        ]
    finally:
        client.close()


@pytest.mark.slow
def test_faults_a_killed_server_left_on_a_separate_cluster_are_reverted_there_on_restart(
    tmp_path: Path,
) -> None:
    data = tmp_path / "control"
    # A realtime marathon of seconds: three faults due in the first ten, each lasting past the kill.
    schedule = {"faults": 3, "delta_s": 2, "budget_s": 1, "injection_period_s": 10,
                "observation_period_s": 20, "min_duration_s": 20, "max_duration_s": 30}  # fmt: skip
    with separate_cluster(tmp_path / "cluster") as cluster:
        body = {"backend": "kube", "kubeconfig": str(cluster.kubeconfig), "seed": 3,
                "prometheus_url": cluster.prometheus_url, "schedule": schedule}  # fmt: skip
        first = Server(data=data).start()
        try:
            with first.client() as client:
                run_id = start_run(client, **body)
                again = client.post(
                    "/runs", json={"app": "online-boutique", "agent": "noop", **body}, headers=AUTH
                )
                assert again.status_code == 409 and run_id in again.json()["detail"]
                injected = 0
                for event in events(client, run_id):
                    injected += event["type"] == "injected"
                    if injected == 3:
                        break
            ledger = data / "runs" / run_id / "run" / "faults.ledger.jsonl"
            handles = ledger_module.read(ledger)[1]
            assert len(handles) == 3
            # Chaos Mesh objects stay in the cluster until reverted; pod and node actions leave none.
            objects = [h for h in handles if h.kind in CRD_KINDS]
            left = _chaos_objects(cluster.kubeconfig, {h.kind.lower() for h in objects})
            assert len(left) == len(objects)
        finally:
            first.kill9()

        second = Server(data=data).start()
        try:
            with second.client() as client:
                view = client.get(f"/runs/{run_id}").json()
                assert view["status"] == "interrupted"
                assert view["recovery"].startswith("3 reverted")
        finally:
            second.stop()
        assert pending_in_ledger(ledger) == []
        assert _chaos_objects(cluster.kubeconfig, {h.kind.lower() for h in objects}) == []
