"""An exported experiment run by Chaos Toolkit against a served realtime twin and the Prometheus it writes to:
the steady state holds before the method, the chaos object is in the cluster while the method holds it, the
twin's telemetry shows the delay, and the rollback takes the object out."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.cli import main
from orchestrator.cluster.client import KubeClient
from tests.api.cluster import separate_cluster

CHAOS = Path(sys.executable).with_name("chaos")
# The admitted network delay of online-boutique: 6 s on cartservice's packets to redis-cart.
ENTRY = "ob-cart-redis-latency"
HOLD_S = 30
OBJECT = f"networkchaos-{ENTRY}"


def _value(prometheus_url: str, promql: str) -> float:
    """The scalar ``promql`` evaluates to now, as the experiment's probe asks it (NaN without data)."""
    response = httpx.get(f"{prometheus_url}/api/v1/query", params={"query": promql}, timeout=30)
    response.raise_for_status()
    return float(response.json()["data"]["result"][1])


def _wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")
        time.sleep(1)


def _chaos_names(kube: KubeClient) -> list[str]:
    found = kube.custom.list_namespaced_custom_object(
        "chaos-mesh.org", "v1alpha1", "chaos-mesh", "networkchaos"
    )
    return [str(item["metadata"]["name"]) for item in found["items"]]


def _probe_value(run: dict[str, Any]) -> float:
    return float(run["output"]["data"]["result"][1])


@pytest.mark.slow
def test_chaos_run_of_an_exported_network_delay_holds_the_chaos_then_rolls_it_back(tmp_path: Path) -> None:
    if shutil.which("prometheus") is None or not CHAOS.exists():
        pytest.skip("needs the prometheus binary and the chaostoolkit CLI")
    experiment, journal = tmp_path / "experiment.json", tmp_path / "journal.json"
    with separate_cluster(tmp_path / "cluster", seed=3) as cluster:
        export = ["catalog", "export-ctk", ENTRY, "--prometheus", cluster.prometheus_url,
                  "--duration", str(HOLD_S), "-o", str(experiment)]  # fmt: skip
        assert main(export) == 0
        document = json.loads(experiment.read_text(encoding="utf-8"))
        healthy = document["steady-state-hypothesis"]["probes"][0]["provider"]["arguments"]["query"]
        # The twin lives at the wall clock: once two scrapes of cartservice's spans are in, "now" has data.
        _wait_for(
            lambda: _value(cluster.prometheus_url, healthy) == 1.0,
            timeout=240,
            what="the steady-state probe has data in the twin's Prometheus",
        )
        kube = KubeClient.from_kubeconfig(cluster.kubeconfig)
        assert _chaos_names(kube) == []
        with (tmp_path / "chaos.log").open("w", encoding="utf-8") as log:
            chaos = subprocess.Popen(
                [str(CHAOS), "--no-log-file", "run", "--journal-path", str(journal), str(experiment)],
                env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
                cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                _wait_for(lambda: _chaos_names(kube) != [], timeout=120, what="the method creates the chaos")
                assert chaos.poll() is None, "the run ended as soon as the chaos was created"
                assert _chaos_names(kube) == [OBJECT]
                exit_code = chaos.wait(timeout=HOLD_S + 180)
            finally:
                if chaos.poll() is None:
                    chaos.kill()
                    chaos.wait()
        left = _chaos_names(kube)
    output = (tmp_path / "chaos.log").read_text(encoding="utf-8")
    run = json.loads(journal.read_text(encoding="utf-8"))
    # The fault showed its symptom, so the steady state deviates: Chaos Toolkit exits 1 for that.
    assert exit_code == 1, output
    assert "Experiment ended with status: deviated" in output
    assert run["deviated"] is True
    before, after = run["steady_states"]["before"], run["steady_states"]["after"]
    assert before["steady_state_met"] is True and _probe_value(before["probes"][0]) == 1.0
    assert after["steady_state_met"] is False and _probe_value(after["probes"][0]) == 0.0
    create, symptom = run["run"]
    assert create["status"] == "succeeded" and create["output"]["metadata"]["name"] == OBJECT
    assert create["end"] is not None
    # Six seconds of delay to redis-cart: cartservice's p95 is far past its 500 ms healthy bound.
    latency_ms = _probe_value(symptom)
    assert not math.isnan(latency_ms) and latency_ms > 5000, latency_ms
    (rollback,) = run["rollbacks"]
    assert rollback["activity"]["name"] == "delete-networkchaos" and rollback["status"] == "succeeded"
    assert left == []
