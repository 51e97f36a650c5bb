"""``kill -9`` an orchestrator mid-run, then ``marathon recover --journal``: the twin is as it was before."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from orchestrator.admission.twins import attach_twin, spawn_twin
from orchestrator.cluster.client import KubeClient

pytestmark = pytest.mark.slow
OB = "online-boutique"
CHAOS_NS = "chaos-mesh"
CHAOS_PLURALS = ("podchaos", "networkchaos", "stresschaos", "dnschaos", "iochaos", "httpchaos")
# Overlapping on purpose: a release and an env change of one Deployment, a Service, two chaos kinds.
FAULTS = (
    "ob-cart-additem-null-cart",
    "ob-cart-redis-port",
    "ob-shipping-service-targetport",
    "ob-cart-redis-latency",
    "ob-currency-memory-limit",
    "ob-checkout-dns-errors",
)
KILL_AFTER = 4  # injected faults seen before the kill; the next one is under way

ORCHESTRATOR = """
import sys
from pathlib import Path

import httpx

from orchestrator.catalog.loading import load_catalog
from orchestrator.mechanisms.applying import Applier, Applied
from orchestrator.cluster.client import KubeClient
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.mechanisms.handles import Context
from orchestrator.twin.apiserver.kubeconfig import read_credentials

url, kubeconfig, journal, *ids = sys.argv[1:]
credentials = read_credentials(Path(kubeconfig))
http = httpx.Client(timeout=120, headers=credentials.headers, verify=credentials.ssl_context())


def settle() -> None:
    http.post(url + "/twin/v1/advance", json={"seconds": 5}).raise_for_status()


client = KubeClient.from_kubeconfig(Path(kubeconfig))
ctx = Context(client=client, namespace="online-boutique", chaos_namespace="chaos-mesh", settle=settle)
book = Ledger(Path(journal))
book.open(Target(kubeconfig=kubeconfig, namespace="online-boutique", chaos_namespace="chaos-mesh"))
applier = Applier(ctx=ctx, ledger=book)
catalog = load_catalog("online-boutique")
for number, catalog_id in enumerate(ids):
    result = applier.inject(catalog.by_id[catalog_id], fault_id=f"f{number}")
    print(("injected " if isinstance(result, Applied) else "failed ") + catalog_id, flush=True)
while True:  # the run goes on until it is killed
    settle()
"""


def _state(kube: KubeClient) -> dict[str, Any]:
    """What the faults may touch: every Deployment's and Service's spec, every ConfigMap's data."""
    return {
        "deployments": {
            d["metadata"]["name"]: d["spec"] for d in kube.list_objects("Deployment", namespace=OB)
        },
        "services": {s["metadata"]["name"]: s["spec"] for s in kube.list_objects("Service", namespace=OB)},
        "configmaps": {
            c["metadata"]["name"]: c.get("data") for c in kube.list_objects("ConfigMap", namespace=OB)
        },
    }


def _chaos_objects(kube: KubeClient) -> list[str]:
    custom = k8s.CustomObjectsApi(kube.api)
    names: list[str] = []
    for plural in CHAOS_PLURALS:
        listed: Any = custom.list_namespaced_custom_object("chaos-mesh.org", "v1alpha1", CHAOS_NS, plural)
        names += [f"{plural}/{item['metadata']['name']}" for item in listed["items"]]
    return names


def test_recover_after_kill_9_restores_every_object_and_leaves_no_chaos(tmp_path: Path) -> None:
    process = spawn_twin(OB, seed=5, workdir=tmp_path / "twin")
    with attach_twin(process, app=OB, workdir=tmp_path / "twin") as twin:
        twin.advance(120)
        kube = KubeClient.from_kubeconfig(twin.kubeconfig)
        try:
            before = _state(kube)
            journal = tmp_path / "faults.ledger.jsonl"
            script = tmp_path / "orchestrator_process.py"
            script.write_text(ORCHESTRATOR, encoding="utf-8")
            runner = subprocess.Popen(
                [sys.executable, str(script), twin.url, str(twin.kubeconfig), str(journal), *FAULTS],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=Path.cwd(),
            )
            assert runner.stdout is not None
            seen: list[str] = []
            while len(seen) < KILL_AFTER:
                line = runner.stdout.readline()
                assert line, f"the orchestrator exited early: {runner.wait()} {runner.stderr.read()}"  # type: ignore[union-attr]
                seen.append(line.strip())
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait(timeout=30)
            assert runner.returncode == -signal.SIGKILL
            assert seen == [f"injected {catalog_id}" for catalog_id in FAULTS[:KILL_AFTER]]
            assert _state(kube) != before, "the killed run left nothing to recover"
            assert _chaos_objects(kube)

            recovered = subprocess.run(
                [sys.executable, "-m", "orchestrator.cli", "recover", "--journal", str(journal)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert recovered.returncode == 0, recovered.stdout + recovered.stderr
            # The fault under way at the kill is pending too if its handle reached the ledger.
            summary = re.search(r"recovered (\d+) of (\d+) pending faults", recovered.stdout)
            assert summary is not None, recovered.stdout
            assert summary.group(1) == summary.group(2)
            assert int(summary.group(1)) in (KILL_AFTER, KILL_AFTER + 1)
            twin.advance(30)
            assert _state(kube) == before
            assert _chaos_objects(kube) == []
            again = subprocess.run(
                [sys.executable, "-m", "orchestrator.cli", "recover", "--journal", str(journal)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert again.returncode == 0 and "nothing to recover" in again.stdout
        finally:
            kube.close()
