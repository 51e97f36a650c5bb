"""The resource metrics API (``metrics.k8s.io/v1beta1``) as metrics-server serves it: ``kubectl top``.

PodMetrics carry each running container's CPU rate over the twin's last step and its working set, read
from the app model's cAdvisor-like usage (an idle usage, ``IDLE``, for a container the model does not
simulate, as a busybox pod beside the app); NodeMetrics sum the pods bound to each node. Only a twin with an
app model serves the group (a bare cluster has no usage to report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from orchestrator.errors import ApiStatusError
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.selectors import labels_match, parse_label_selector
from orchestrator.twin.store import NODES, PODS
from orchestrator.twin.timefmt import rfc3339

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
WINDOW = "15s"
# A running container the app model does not simulate (a utility pod beside the app: busybox, a debug
# shell) idles: no CPU to speak of, the working set of a shell.
IDLE = (0.0, 1024.0 * 1024.0)


class ContainerUsage(Protocol):
    cores: float
    working_set: float


UsageSource = Callable[[], Mapping[tuple[str, str], ContainerUsage]]


def group() -> dict[str, Any]:
    """The group's entry of the /apis list."""
    gv = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"name": GROUP, "versions": [gv], "preferredVersion": gv}


def _resource_list() -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": [
            {
                "name": plural,
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["get", "list"],
            }
            for plural, namespaced, kind in (("nodes", False, "NodeMetrics"), ("pods", True, "PodMetrics"))
        ],
    }


def _cpu(cores: float) -> str:
    return f"{round(cores * 1e9)}n"


def _memory(working_set: float) -> str:
    return f"{round(working_set / 1024)}Ki"


def _pod_metrics(
    cluster: Cluster, usage: Mapping[tuple[str, str], ContainerUsage], pod: dict[str, Any]
) -> dict[str, Any] | None:
    meta = pod["metadata"]
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    containers = []
    for container in pod["spec"].get("containers", []):
        found = usage.get((meta["name"], container["name"]))
        cores, working_set = (found.cores, found.working_set) if found is not None else IDLE
        containers.append(
            {"name": container["name"], "usage": {"cpu": _cpu(cores), "memory": _memory(working_set)}}
        )
    return {
        "kind": "PodMetrics",
        "apiVersion": GROUP_VERSION,
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "creationTimestamp": rfc3339(cluster.now),
            "labels": dict(meta.get("labels") or {}),
        },
        "timestamp": rfc3339(cluster.now),
        "window": WINDOW,
        "containers": containers,
    }


def _not_found(kind: str, name: str) -> ApiStatusError:
    return ApiStatusError(
        404,
        "NotFound",
        f'{kind}.{GROUP} "{name}" not found',
        details={"name": name, "group": GROUP, "kind": kind},
    )


def register(app: FastAPI, cluster: Cluster, usage: UsageSource) -> None:
    """Add the group's routes to ``app``; before the API server's catch-all group routes."""

    def pods(request: Request, namespace: str | None) -> list[dict[str, Any]]:
        selector = parse_label_selector(request.query_params.get("labelSelector"))
        current = usage()
        found = []
        for pod in cluster.store.list(PODS, namespace, labels=selector):
            metrics = _pod_metrics(cluster, current, pod)
            if metrics is not None:
                found.append(metrics)
        return found

    def listing(kind: str, items: list[dict[str, Any]]) -> JSONResponse:
        meta = {"resourceVersion": ""}
        return JSONResponse(
            {"kind": f"{kind}List", "apiVersion": GROUP_VERSION, "metadata": meta, "items": items}
        )

    async def group_root(_request: Request) -> JSONResponse:
        return JSONResponse({"kind": "APIGroup", "apiVersion": "v1", **group()})

    async def resources(_request: Request) -> JSONResponse:
        return JSONResponse(_resource_list())

    async def all_pods(request: Request) -> JSONResponse:
        with cluster.lock:
            return listing("PodMetrics", pods(request, None))

    async def namespace_pods(request: Request) -> JSONResponse:
        with cluster.lock:
            return listing("PodMetrics", pods(request, request.path_params["namespace"]))

    async def one_pod(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        with cluster.lock:
            for metrics in pods(request, request.path_params["namespace"]):
                if metrics["metadata"]["name"] == name:
                    return JSONResponse(metrics)
        raise _not_found("podmetrics", name)

    def node_metrics(request: Request) -> list[dict[str, Any]]:
        selector = parse_label_selector(request.query_params.get("labelSelector"))
        current = usage()
        by_node: dict[str, list[float]] = {}
        for pod in cluster.store.list(PODS, None):
            node = pod["spec"].get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") != "Running":
                continue
            total = by_node.setdefault(node, [0.0, 0.0])
            for container in pod["spec"].get("containers", []):
                used = current.get((pod["metadata"]["name"], container["name"]))
                if used is not None:
                    total[0] += used.cores
                    total[1] += used.working_set
        found = []
        for node in cluster.store.list(NODES):
            meta = node["metadata"]
            if not labels_match(selector, meta.get("labels")):
                continue
            cores, memory = by_node.get(meta["name"], [0.0, 0.0])
            found.append(
                {
                    "kind": "NodeMetrics",
                    "apiVersion": GROUP_VERSION,
                    "metadata": {
                        "name": meta["name"],
                        "creationTimestamp": rfc3339(cluster.now),
                        "labels": dict(meta.get("labels") or {}),
                    },
                    "timestamp": rfc3339(cluster.now),
                    "window": WINDOW,
                    "usage": {"cpu": _cpu(cores), "memory": _memory(memory)},
                }
            )
        return found

    async def all_nodes(request: Request) -> JSONResponse:
        with cluster.lock:
            return listing("NodeMetrics", node_metrics(request))

    async def one_node(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        with cluster.lock:
            for metrics in node_metrics(request):
                if metrics["metadata"]["name"] == name:
                    return JSONResponse(metrics)
        raise _not_found("nodemetrics", name)

    base = f"/apis/{GROUP_VERSION}"
    app.add_api_route(f"/apis/{GROUP}", group_root, methods=["GET"])
    app.add_api_route(base, resources, methods=["GET"])
    app.add_api_route(f"{base}/pods", all_pods, methods=["GET"])
    app.add_api_route(f"{base}/namespaces/{{namespace}}/pods", namespace_pods, methods=["GET"])
    app.add_api_route(f"{base}/namespaces/{{namespace}}/pods/{{name}}", one_pod, methods=["GET"])
    app.add_api_route(f"{base}/nodes", all_nodes, methods=["GET"])
    app.add_api_route(f"{base}/nodes/{{name}}", one_node, methods=["GET"])
