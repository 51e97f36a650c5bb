"""``marathon recover`` against a cluster that does not answer: one error line, and the ledger untouched."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from orchestrator.catalog.faults import Mechanism
from orchestrator.mechanisms.handles import Handle
from orchestrator.mechanisms.ledger import Ledger, Target


def test_recover_leaves_the_ledger_as_it_was_when_the_cluster_does_not_answer(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    journal = tmp_path / "faults.ledger.jsonl"
    book = Ledger(journal)
    book.open(Target(kubeconfig=str(kubeconfig), namespace="shop", chaos_namespace="chaos-mesh"))
    book.planned(
        Handle(fault_id="f1", catalog_id="ob-x", mechanism=Mechanism.CONFIG, kind="Deployment",  # fmt: skip
               namespace="shop", name="cart", field="spec.replicas", pre_value=1, injected_value=0)
    )
    book.applied("f1")
    book.close()
    before = journal.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "recover", "--journal", str(journal)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "1 pending faults left as they are" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert journal.read_bytes() == before
