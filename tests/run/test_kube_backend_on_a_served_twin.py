"""The kube backend against a cluster it did not start: a served realtime twin in its own process, writing to
its own Prometheus, both on the wall clock as a real cluster and its Prometheus are. A short runbook marathon
records the alerts the faults raise, reverts every fault, and leaves a bundle that verifies and scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.verify import verify_bundle
from tests.api.bundles import unreverted
from tests.api.cluster import separate_cluster

# Five faults in the first minute (chaos objects and a setting), ten-second boundaries, two more minutes to
# see them raise alerts.
SHORT = ["--faults", "5", "--delta", "10", "--injection-period", "60", "--observation-period", "120"]


@pytest.mark.slow
def test_a_kube_backend_marathon_on_a_served_twin_records_alerts_reverts_and_verifies(tmp_path: Path) -> None:
    with separate_cluster(tmp_path / "cluster", seed=3) as cluster:
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "run", "--backend", "kube",
             "--kubeconfig", str(cluster.kubeconfig), "--prometheus-url", cluster.prometheus_url,
             "--app", "online-boutique", "--seed", "3", "--agent", "runbook", *SHORT,
             "--runs", str(tmp_path / "runs"), "--no-register", "--quiet"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("bundle: "))
    bundle = Path(line.removeprefix("bundle: "))
    verification = verify_bundle(bundle)
    assert verification.ok, verification.findings
    loaded = read_bundle(bundle)
    assert loaded.manifest.schedule_params["backend"] == "kube" and len(loaded.injected) == 5
    assert unreverted(bundle) == []
    assert loaded.alerts, "no alert recorded: the twin's series are not where Prometheus is queried"
    score = json.loads((bundle.parent / "score.json").read_text(encoding="utf-8"))
    assert score["corr"] > 0 and score["marathon_score"] > 0
