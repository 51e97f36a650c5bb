"""Start-up recovery: runs that were active when the server died are marked ``interrupted``, their faults
are reverted from the revert ledger, and what their journal holds is sealed so it still verifies.

Whether a fault can be reverted depends on where it lives. A separately running cluster is still there:
its pending faults are reverted for real. An in-process twin died with its worker, taking its faults with
it: nothing is left to revert, and the ledger is settled so no later ``recover`` tries again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.bundle.journal import STREAM_SUFFIX, genesis_hash, scan_stream
from orchestrator.bundle.seal import is_sealed, read_manifest
from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ClusterError, OrchestratorError, RevertError
from orchestrator.mechanisms import ledger
from orchestrator.mechanisms.applying import revert_handle
from orchestrator.mechanisms.handles import Context
from orchestrator.run.finishing import BUNDLE_DIR, seal
from orchestrator.run.setup import LEDGER_FILE

RUN_DIR = "run"
GONE = "already_restored"  # the world that held the fault no longer exists
WORKER_EXIT_WAIT_S = 10.0


@dataclass(frozen=True)
class Recovered:
    reverted: int
    settled: int
    failed: list[str]
    sealed: bool
    note: str

    def summary(self) -> str:
        parts = [f"{self.reverted} reverted", f"{self.settled} settled (their world had ended)"]
        if self.failed:
            parts.append("FAILED: " + "; ".join(self.failed))
        parts.append("bundle sealed" if self.sealed else "bundle not sealed")
        if self.note:
            parts.append(self.note)
        return ", ".join(parts)


def _is_worker(pid: int) -> bool:
    """Whether ``pid`` is still one of our spawned run workers (not some process that reused the number)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"multiprocessing" in cmdline.read()
    except OSError:
        return False


def owned_elsewhere(owner_pid: int | None) -> bool:
    """Whether another control-plane process that is still alive follows the run (a server and a
    ``nightly --once`` may share one registry)."""
    if owner_pid is None or owner_pid == os.getpid():
        return False
    try:
        with open(f"/proc/{owner_pid}/cmdline", "rb") as cmdline:
            command = cmdline.read()
        with open(f"/proc/{owner_pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and (b"marathon" in command or b"orchestrator" in command)


def end_orphan_worker(pid: int | None) -> None:
    """A worker notices its server's death by itself; wait for that, and end it by its PID if it has not."""
    if pid is None:
        return
    deadline = time.monotonic() + WORKER_EXIT_WAIT_S
    while _is_worker(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _is_worker(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _reachable(client: KubeClient, namespace: str) -> bool:
    try:
        client.core.read_namespace(namespace, _request_timeout=5)
    except Exception:  # any failure to answer means the cluster is not there to revert on
        return False
    return True


def settle_ledger(path: Path, *, backend: str) -> tuple[int, int, list[str]]:
    """Revert (or settle) every pending fault of the ledger; returns (reverted, settled, failures)."""
    target, pending = ledger.read(path)
    if not pending:
        return 0, 0, []
    try:
        client: KubeClient | None = KubeClient.from_kubeconfig(Path(target.kubeconfig))
    except ClusterError:
        client = None
    book = ledger.Ledger(path)
    reverted, settled, failed = 0, 0, []
    try:
        if client is not None and _reachable(client, target.namespace):
            ctx = Context(
                client=client,
                namespace=target.namespace,
                chaos_namespace=target.chaos_namespace,
                settle=lambda: time.sleep(1.0),
            )
            for handle in reversed(pending):
                try:
                    revert_handle(handle, ctx, ledger=book, attempts=4)
                    reverted += 1
                except RevertError as exc:
                    failed.append(str(exc))
        elif backend == "twin":
            for handle in reversed(pending):
                book.reverted(handle.fault_id, GONE)
                settled += 1
        else:
            failed.append(f"the cluster of {target.kubeconfig} does not answer; run marathon recover later")
    finally:
        book.close()
        if client is not None:
            client.close()
    return reverted, settled, failed


def seal_interrupted(run_dir: Path) -> bool:
    """Seal what the journal holds (cutting a torn last record), so the bundle verifies."""
    bundle = run_dir / BUNDLE_DIR
    if is_sealed(bundle):
        return True
    try:
        genesis = genesis_hash(read_manifest(bundle).run_id)
        for path in sorted(bundle.glob(f"*{STREAM_SUFFIX}")):
            scan = scan_stream(path, genesis=genesis)
            if scan.partial_tail:
                # The record was cut off mid-write, so it was never acknowledged: drop its bytes.
                with path.open("r+b") as cut:
                    cut.truncate(scan.complete_bytes)
        seal(run_dir)
    except OrchestratorError:
        return False
    return True


def recover_run(home: Path, *, backend: str, worker_pid: int | None) -> Recovered:
    end_orphan_worker(worker_pid)
    run_dir = home / RUN_DIR
    path = run_dir / LEDGER_FILE
    reverted, settled, note = 0, 0, ""
    failed: list[str] = []
    if path.is_file():
        try:
            reverted, settled, failed = settle_ledger(path, backend=backend)
        except OrchestratorError as exc:
            failed.append(str(exc))
    else:
        note = "no fault was ever planned"
    return Recovered(reverted, settled, failed, seal_interrupted(run_dir), note)
