"""The Kubernetes side of the twin alone: cost of ``Cluster.step`` over a 90-minute run, for ``make bench``.

The runtime answers "healthy" at once, so the figure is the controllers' own cost; the application model's
verdicts come on top and are measured with the whole twin.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.runtime_protocol import ContainerVerdict
from orchestrator.twin.store import DEPLOYMENTS

ROOT = Path(__file__).resolve().parent.parent
STEPS = 1080  # 90 minutes in 5 s steps
TARGET_MS = 2.0


class _Healthy:
    def verdict(self, pod: dict[str, Any], container: dict[str, Any], now: float) -> ContainerVerdict:
        return ContainerVerdict()


def _run(app: str) -> tuple[float, int]:
    topology = load_topology(app, root=ROOT)
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / app / "app.yaml").read_text()) if d]
    cluster = Cluster(seed=1, nodes=topology.nodes, runtime=_Healthy())
    cluster.apply_manifests(docs)
    names = sorted(d["metadata"]["name"] for d in cluster.store.list(DEPLOYMENTS))
    started = time.perf_counter()
    for index in range(1, STEPS + 1):
        if index % 120 == 0:  # a template change every ten minutes keeps rollouts in the figure
            name = names[(index // 120) % len(names)]
            current = json.loads(json.dumps(cluster.store.get(DEPLOYMENTS, topology.namespace, name)))
            annotations = current["spec"]["template"]["metadata"].setdefault("annotations", {})
            annotations["kubectl.kubernetes.io/restartedAt"] = str(index)
            with cluster.lock:
                cluster.store.replace(DEPLOYMENTS, current)
        cluster.step(index * 5.0)
    return (time.perf_counter() - started) / STEPS * 1000, len(names)


def bench() -> list[tuple[str, str, str]]:
    rows = []
    for app in ("online-boutique", "astronomy-shop", "train-ticket"):
        per_step, deployments = _run(app)
        rows.append(
            (
                f"Cluster.step, {app} ({deployments} deployments, rollout every 10 min)",
                f"{per_step:.2f} ms/step",
                f"< {TARGET_MS:.0f} ms/step",
            )
        )
    return rows
