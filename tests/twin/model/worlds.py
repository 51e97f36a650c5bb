"""Hand-built cluster states for model tests: the rendered manifests plus a running pod per replica."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from orchestrator.catalog.topology import Topology
from orchestrator.twin.model.state import Snapshot, snapshot

ROOT = Path(__file__).resolve().parents[3]


def manifests(app: str) -> list[dict[str, Any]]:
    text = (ROOT / "manifests" / app / "app.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def running_pods(docs: list[dict[str, Any]], *, started: float = 0.0) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for doc in docs:
        if doc.get("kind") not in ("Deployment", "StatefulSet"):
            continue
        name = doc["metadata"]["name"]
        template = doc["spec"]["template"]
        for index in range(int(doc["spec"].get("replicas", 1))):
            spec = copy.deepcopy(template["spec"])
            spec["nodeName"] = "marathon-worker"
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-5d8f7c9b4f-{index:05d}", "uid": f"uid-{name}-{index}",
                             "namespace": doc["metadata"].get("namespace"), "labels": dict(template["metadata"]["labels"]),
                             "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": spec,
                "status": {
                    "phase": "Running", "podIP": f"10.244.1.{len(pods) + 2}",
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [
                        {"name": c["name"], "ready": True,
                         "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
                        for c in spec["containers"]
                    ],
                },
            })
    del started
    return pods


def world(topology: Topology, docs: list[dict[str, Any]], *, now: float, pods: list[dict[str, Any]] | None = None,
          chaos: list[dict[str, Any]] | None = None) -> Snapshot:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        kinds.setdefault(doc["kind"], []).append(doc)
    return snapshot(
        namespace=topology.namespace, now=now,
        workloads=kinds.get("Deployment", []) + kinds.get("StatefulSet", []),
        pods=running_pods(docs) if pods is None else pods,
        services=kinds.get("Service", []), configmaps=kinds.get("ConfigMap", []),
        secrets=kinds.get("Secret", []), chaos=chaos or [],
    )
