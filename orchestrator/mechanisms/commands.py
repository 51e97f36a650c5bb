"""``marathon recover``: revert every fault a crashed or killed run left in its cluster, from its ledger."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ClusterError, RevertError
from orchestrator.mechanisms import ledger
from orchestrator.mechanisms.applying import revert_handle
from orchestrator.mechanisms.handles import Context


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("recover", help="revert the faults a crashed run left behind")
    parser.add_argument(
        "--journal", type=Path, required=True, help="the run's revert ledger (faults.ledger.jsonl)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="override the cluster recorded in the ledger")
    parser.set_defaults(func=_recover)


def _recover(args: argparse.Namespace) -> int:
    target, pending = ledger.read(args.journal)
    if not pending:
        print(f"{args.journal}: nothing to recover")
        return 0
    client = KubeClient.from_kubeconfig(args.kubeconfig or Path(target.kubeconfig))
    try:
        client.system_uid(timeout_s=10.0)
    except ClusterError as exc:
        client.close()
        raise ClusterError(
            f"{args.journal}: {len(pending)} pending faults left as they are, "
            f"the cluster does not answer: {exc}"
        ) from None
    ctx = Context(
        client=client,
        namespace=target.namespace,
        chaos_namespace=target.chaos_namespace,
        settle=lambda: time.sleep(1.0),
    )
    book = ledger.Ledger(args.journal)
    failures = 0
    try:
        for handle in reversed(pending):
            try:
                outcome = revert_handle(handle, ctx, ledger=book, attempts=4)
            except RevertError as exc:
                failures += 1
                print(f"FAILED {handle.fault_id} {handle.catalog_id}: {exc}")
                continue
            print(f"{outcome:<17} {handle.fault_id} {handle.catalog_id} ({handle.kind} {handle.name})")
    finally:
        book.close()
        client.close()
    print(f"recovered {len(pending) - failures} of {len(pending)} pending faults")
    return 1 if failures else 0
