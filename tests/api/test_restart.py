"""SIGKILL of ``marathon serve`` in the middle of a run: the worker and its twin die with the server, and
the restarted server marks the run interrupted, settles its revert ledger and seals what it journaled."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest
import yaml

from orchestrator.api.registry import Registry
from orchestrator.bundle.verify import verify_bundle
from tests.api.bundles import pending_in_ledger, unpack
from tests.api.live import Server, events, start_run


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def _processes_under(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (the run's Prometheus, its twin, its agent)."""
    found = []
    needle = str(path).encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if needle in cmdline.read() and _alive(int(entry)):
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
        kubeconfig = yaml.safe_load((home / "run" / "kubeconfig").read_text(encoding="utf-8"))
        twin_url = kubeconfig["clusters"][0]["cluster"]["server"]
        assert httpx.get(f"{twin_url}/version", timeout=5).status_code == 200
        ledger = home / "run" / "faults.ledger.jsonl"
        assert pending_in_ledger(ledger), "a fault was live when the server was killed"
    finally:
        first.kill9()

    deadline = time.monotonic() + 15
    while (_alive(row.worker_pid) or _processes_under(home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(row.worker_pid)
    assert _processes_under(home) == []
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{twin_url}/version", timeout=5)

    second = Server(data=data).start()
    try:
        with second.client() as client:
            view = client.get(f"/runs/{run_id}").json()
            assert view["status"] == "interrupted"
            assert view["active_faults"] == []
            assert "settled" in view["recovery"] and "bundle sealed" in view["recovery"]
            replayed = [e["type"] for e in events(client, run_id, timeout=30)]
            assert replayed[0] == "started" and replayed[-1] == "interrupted"
            bundle = unpack(client.get(f"/runs/{run_id}/bundle").content, tmp_path / "unpacked")
            assert verify_bundle(bundle).ok
        assert pending_in_ledger(ledger) == []
    finally:
        second.stop()
