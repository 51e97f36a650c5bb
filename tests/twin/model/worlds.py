"""Hand-built cluster states for model tests: the rendered manifests plus one running pod per replica."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Topology
from orchestrator.twin.logbook import LogBook
from orchestrator.twin.model.engine import AppModel
from orchestrator.twin.model.podlogs import PodLogger
from orchestrator.twin.model.registry import ImageRegistry
from orchestrator.twin.model.state import Snapshot, snapshot

ROOT = Path(__file__).resolve().parents[3]
OB_APP = "online-boutique"
Obj = dict[str, Any]


def manifests(app: str) -> list[Obj]:
    text = (ROOT / "manifests" / app / "app.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def running_pods(docs: list[Obj]) -> list[Obj]:
    pods: list[Obj] = []
    for doc in docs:
        if doc.get("kind") not in ("Deployment", "StatefulSet"):
            continue
        name = doc["metadata"]["name"]
        template = doc["spec"]["template"]
        for index in range(int(doc["spec"].get("replicas", 1))):
            spec = copy.deepcopy(template["spec"])
            spec["nodeName"] = "marathon-worker"
            meta = {
                "name": f"{name}-5d8f7c9b4f-{index:05d}",
                "uid": f"uid-{name}-{index}",
                "namespace": doc["metadata"].get("namespace"),
                "labels": dict(template["metadata"]["labels"]),
                "creationTimestamp": "2026-01-01T00:00:00Z",
            }
            statuses = [
                {
                    "name": c["name"],
                    "ready": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
                for c in spec["containers"]
            ]
            status = {
                "phase": "Running",
                "podIP": f"10.244.1.{len(pods) + 2}",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": statuses,
            }
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    return pods


def world(
    topology: Topology,
    docs: list[Obj],
    *,
    now: float,
    pods: list[Obj] | None = None,
    chaos: list[Obj] | None = None,
) -> Snapshot:
    kinds: dict[str, list[Obj]] = {}
    for doc in docs:
        kinds.setdefault(doc["kind"], []).append(doc)
    return snapshot(
        namespace=topology.namespace,
        now=now,
        workloads=kinds.get("Deployment", []) + kinds.get("StatefulSet", []),
        pods=running_pods(docs) if pods is None else pods,
        services=kinds.get("Service", []),
        configmaps=kinds.get("ConfigMap", []),
        secrets=kinds.get("Secret", []),
        chaos=chaos or [],
    )


def model(app: str, *, seed: int = 1, registry: ImageRegistry | None = None) -> tuple[AppModel, LogBook]:
    topology = load_topology(app)
    book = LogBook()
    logger = PodLogger(topology=topology, logbook=book, seed=seed)
    built = AppModel(
        topology=topology, registry=registry or ImageRegistry(topology), seed=seed, logger=logger
    )
    return built, book


def container(pod: Obj, name: str | None = None) -> Obj:
    found: Obj = (
        pod["spec"]["containers"][0]
        if name is None
        else next(c for c in pod["spec"]["containers"] if c["name"] == name)
    )
    return found


def pod_of(pods: list[Obj], workload: str) -> Obj:
    return next(p for p in pods if p["metadata"]["name"].startswith(f"{workload}-5d8f"))


def set_env(pod: Obj, name: str, value: str | None) -> None:
    env = [e for e in container(pod).get("env", []) if e["name"] != name]
    if value is not None:
        env.append({"name": name, "value": value})
    container(pod)["env"] = env


def chaos(
    kind: str,
    name: str,
    spec: Obj,
    *,
    namespace: str = "online-boutique",
    created: str = "2026-01-01T00:00:00Z",
) -> Obj:
    return {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": spec,
    }


def run(
    built: AppModel,
    topology: Topology,
    docs: list[Obj],
    *,
    start: float,
    seconds: float,
    pods: list[Obj] | None = None,
    chaos_objects: list[Obj] | None = None,
) -> float:
    """Step the model from ``start`` for ``seconds``; returns the end time."""
    now = start
    while now < start + seconds:
        now += built.step_seconds
        built.step(now, world(topology, docs, now=now, pods=pods, chaos=chaos_objects))
    return now


def server_counts(built: AppModel, service: str, span: str | None = None) -> tuple[float, float]:
    """(ok, error) SERVER span counts of a service (one span name, or all)."""
    ok = error = 0.0
    for (svc, name, kind, status), count, _total, _buckets in built.spans.export():
        if svc == service and kind == "SPAN_KIND_SERVER" and (span is None or name == span):
            if status == "STATUS_CODE_ERROR":
                error += count
            else:
                ok += count
    return ok, error
