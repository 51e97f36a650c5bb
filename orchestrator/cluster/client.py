"""The one seam to Kubernetes: the official client, objects in their JSON form, errors as ``ClusterError``.

Objects are read as the API server sent them (``_preload_content=False``, the client's option for the raw
response): the client's typed models would be built from the JSON only to be turned back into it, which
took 0.3-0.45 ms of a 1.1 ms read of a Deployment from the twin, and would rewrite its timestamps and drop
its explicit nulls on the way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from orchestrator.cluster.fields import Patch
from orchestrator.errors import ClusterError
from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_VERSION

Json = dict[str, Any]

_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
# kind -> (API attribute, method suffix, namespaced): verbs resolve to ``<verb>_[namespaced_]<suffix>``.
_API_OF_KIND: dict[str, tuple[str, str, bool]] = {
    "Pod": ("core", "pod", True),
    "Service": ("core", "service", True),
    "Endpoints": ("core", "endpoints", True),
    "ConfigMap": ("core", "config_map", True),
    "Secret": ("core", "secret", True),
    "Event": ("core", "event", True),
    "Node": ("core", "node", False),
    "Namespace": ("core", "namespace", False),
    "Deployment": ("apps", "deployment", True),
    "DeploymentScale": ("apps", "deployment_scale", True),
    "ReplicaSet": ("apps", "replica_set", True),
    "StatefulSet": ("apps", "stateful_set", True),
    "StatefulSetScale": ("apps", "stateful_set_scale", True),
    "ControllerRevision": ("apps", "controller_revision", True),
    "Job": ("batch", "job", True),
}


class NotFound(ClusterError):
    """The object does not exist."""


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name} in {self.namespace}"


class KubeClient:
    """Reads and patches the few object kinds fault mechanisms touch, as plain JSON dicts."""

    def __init__(self, api: client.ApiClient, *, kubeconfig: Path | None = None) -> None:
        self.api = api
        self.kubeconfig = kubeconfig
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    @classmethod
    def from_kubeconfig(cls, path: Path) -> KubeClient:
        try:
            api = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
        except (OSError, config.ConfigException, yaml.YAMLError) as exc:
            raise ClusterError(f"{path}: cannot load kubeconfig: {exc}") from exc
        except (TypeError, ValueError, AttributeError, KeyError) as exc:  # YAML, but not a kubeconfig's shape
            raise ClusterError(f"{path}: cannot load kubeconfig: not a kubeconfig ({exc})") from exc
        return cls(api, kubeconfig=path)

    @property
    def server(self) -> str:
        """The API server's URL, as the kubeconfig names it."""
        host: str = self.api.configuration.host
        return host

    def system_uid(self, *, timeout_s: float = 10.0) -> str:
        """The kube-system namespace's uid: with the server's URL, what tells one cluster from another
        (kube-system is created with the cluster and may never be deleted)."""
        found = self._call(
            "read namespace kube-system", self.core.read_namespace, "kube-system", _request_timeout=timeout_s
        )
        uid = getattr(found.metadata, "uid", None)
        if not uid:
            raise ClusterError("read namespace kube-system: it has no uid")
        return str(uid)

    def serves(self, group: str, version: str, *, timeout_s: float = 10.0) -> bool:
        """Whether the API server serves ``group/version`` (a CRD's group: Chaos Mesh's, say)."""
        try:
            self._call(
                f"discover {group}/{version}", self.custom.get_api_resources, group, version,
                _request_timeout=timeout_s,
            )  # fmt: skip
        except NotFound:
            return False
        return True

    def requests_options(self, url: str) -> dict[str, Any]:
        """``requests`` keyword arguments that reach ``url`` as this client reaches the API server (its CA,
        its bearer token) when the API server itself serves it, as the twin serves its trace queries; none
        for any other origin, so the cluster's credentials are never sent elsewhere."""
        if _origin(url) != _origin(self.server):
            return {}
        configuration = self.api.configuration
        options: dict[str, Any] = {
            "verify": (configuration.ssl_ca_cert or True) if configuration.verify_ssl else False
        }
        bearer = configuration.auth_settings().get("BearerToken") or {}
        if bearer.get("in") == "header" and bearer.get("value"):
            options["headers"] = {"Authorization": str(bearer["value"])}
        return options

    def _fetch(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``_call`` for the response body as JSON, as the server sent it."""
        response = self._call(what, func, *args, _preload_content=False, **kwargs)
        try:
            return json.loads(response.data)
        except ValueError as exc:
            raise ClusterError(f"{what}: the API server's answer is not JSON: {exc}") from exc

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                raise NotFound(f"{what}: not found") from exc
            raise ClusterError(f"{what}: {exc.status} {exc.reason}: {(exc.body or '')[:300]}") from exc
        except (OSError, urllib3.exceptions.HTTPError) as exc:  # refused, reset, TLS, retries exhausted
            raise ClusterError(f"{what}: cannot reach the API server: {exc}") from exc

    def read(self, ref: ObjectRef) -> Json:
        obj: Json = self._fetch(f"read {ref}", self._method("read", ref.kind), *self._where(ref))
        obj.setdefault("kind", ref.kind)
        return obj

    def _method(self, verb: str, kind: str) -> Any:
        if kind not in _API_OF_KIND:
            raise ClusterError(
                f"{verb} {kind}: unsupported kind; supported: {', '.join(sorted(_API_OF_KIND))}"
            )
        api, suffix, namespaced = _API_OF_KIND[kind]
        scope = "namespaced_" if namespaced else ""
        return getattr(getattr(self, api), f"{verb}_{scope}{suffix}")

    @staticmethod
    def _where(ref: ObjectRef) -> tuple[str, ...]:
        return (ref.name, ref.namespace) if _API_OF_KIND[ref.kind][2] else (ref.name,)

    def list_objects(self, kind: str, *, namespace: str | None = None, selector: str = "") -> list[Json]:
        """Every ``kind`` object in ``namespace`` (cluster-scoped kinds ignore it) matching ``selector``."""
        namespaced = _API_OF_KIND.get(kind, ("", "", False))[2]
        args = (namespace,) if namespaced else ()
        where = f"list {kind} in {namespace}" if namespaced else f"list {kind}"
        items = _items(self._fetch(where, self._method("list", kind), *args, label_selector=selector))
        for item in items:
            item.setdefault("kind", kind)
        return items

    def create(self, kind: str, *, namespace: str, body: Json) -> Json:
        name = body.get("metadata", {}).get("name", "?")
        ref = ObjectRef(kind, namespace, name)
        obj: Json = self._fetch(f"create {ref}", self._method("create", kind), namespace, body)
        obj.setdefault("kind", kind)
        return obj

    def delete(self, ref: ObjectRef) -> None:
        self._call(f"delete {ref}", self._method("delete", ref.kind), *self._where(ref))

    def scale(self, ref: ObjectRef, replicas: int) -> Json:
        """Set ``replicas`` through the scale subresource, as ``kubectl scale`` does."""
        body = {"spec": {"replicas": replicas}}
        scaled: Json = self._fetch(
            f"scale {ref}", self._method("patch", ref.kind + "Scale"), ref.name, ref.namespace, body
        )
        return scaled

    def read_log(
        self,
        *,
        namespace: str,
        pod: str,
        container: str | None = None,
        tail: int | None = None,
        since_s: int | None = None,
        previous: bool = False,
    ) -> str:
        options: dict[str, Any] = {"previous": previous}
        if container is not None:
            options["container"] = container
        if tail is not None:
            options["tail_lines"] = tail
        if since_s is not None:
            options["since_seconds"] = since_s
        ref = ObjectRef("Pod", namespace, pod)
        text = self._call(
            f"read the log of {ref}", self.core.read_namespaced_pod_log, pod, namespace, **options
        )
        return str(text)

    def patch(self, ref: ObjectRef, patch: Patch) -> Json:
        patchers: dict[str, Any] = {
            "Deployment": self.apps.patch_namespaced_deployment,
            "StatefulSet": self.apps.patch_namespaced_stateful_set,
            "Service": self.core.patch_namespaced_service,
            "ConfigMap": self.core.patch_namespaced_config_map,
        }
        where: tuple[str, ...] = (ref.name, ref.namespace)
        if ref.kind == "Node":  # cluster-scoped: a node has no namespace
            patchers["Node"], where = self.core.patch_node, (ref.name,)
        obj: Json = self._fetch(
            f"patch {ref}",
            patchers[ref.kind],
            *where,
            patch.body,
            _content_type=_CONTENT_TYPES[patch.style],
        )
        obj.setdefault("kind", ref.kind)
        return obj

    def list_pods(self, namespace: str, *, selector: str) -> list[Json]:
        where = f"list pods in {namespace}"
        return _items(self._fetch(where, self.core.list_namespaced_pod, namespace, label_selector=selector))

    def list_nodes(self) -> list[Json]:
        return _items(self._fetch("list nodes", self.core.list_node))

    def get_chaos(self, *, namespace: str, plural: str, name: str) -> Json:
        obj: Json = self._call(
            f"get {plural}/{name} in {namespace}",
            self.custom.get_namespaced_custom_object,
            CHAOS_GROUP,
            CHAOS_VERSION,
            namespace,
            plural,
            name,
        )
        return obj

    def ensure_namespace(self, name: str) -> None:
        try:
            self._call(f"read namespace {name}", self.core.read_namespace, name)
        except NotFound:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            self._call(f"create namespace {name}", self.core.create_namespace, body)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]


def _items(listed: Json) -> list[Json]:
    """The objects of a list response (an empty list may come as null)."""
    items: list[Json] = listed.get("items") or []
    return items


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def workloads_not_ready(client: KubeClient, namespace: str) -> list[str]:
    """The Deployments and StatefulSets of ``namespace`` not fully rolled out and ready, by name (empty when
    all are). Side effects: two list calls."""
    return not_ready_of(
        client.list_objects("Deployment", namespace=namespace),
        client.list_objects("StatefulSet", namespace=namespace),
    )


def not_ready_of(deployments: Iterable[Json], statefulsets: Iterable[Json]) -> list[str]:
    """The names of the workloads not fully rolled out and ready, sorted (no side effects)."""
    waiting = [d["metadata"]["name"] for d in deployments if not _rolled_out(d)]
    for s in statefulsets:
        spec, status = s.get("spec", {}), s.get("status", {})
        wanted = spec.get("replicas", 1)
        current = status.get("observedGeneration", 0) >= s["metadata"].get("generation", 0)
        if not current or (status.get("readyReplicas") or 0) < wanted:
            waiting.append(s["metadata"]["name"])
    return sorted(waiting)


def _rolled_out(deployment: Json) -> bool:
    spec, status = deployment.get("spec", {}), deployment.get("status", {})
    wanted = spec.get("replicas", 1)
    return bool(
        status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
        and (status.get("updatedReplicas") or 0) >= wanted
        and (status.get("availableReplicas") or 0) >= wanted
        and not status.get("unavailableReplicas")
    )
