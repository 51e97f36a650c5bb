"""The one seam to Kubernetes: the official client, objects in their JSON form, errors as ``ClusterError``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from orchestrator.cluster.fields import Patch
from orchestrator.errors import ClusterError

Json = dict[str, Any]

_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
CHAOS_GROUP = "chaos-mesh.org"
CHAOS_VERSION = "v1alpha1"


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
        self.custom = client.CustomObjectsApi(api)

    @classmethod
    def from_kubeconfig(cls, path: Path) -> KubeClient:
        try:
            api = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
        except (OSError, config.ConfigException) as exc:
            raise ClusterError(f"{path}: cannot load kubeconfig: {exc}") from exc
        return cls(api, kubeconfig=path)

    def _json(self, obj: Any) -> Json:
        data: Json = self.api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
        return data

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                raise NotFound(f"{what}: not found") from exc
            raise ClusterError(f"{what}: {exc.status} {exc.reason}: {(exc.body or '')[:300]}") from exc
        except OSError as exc:  # urllib3 connection errors derive from OSError
            raise ClusterError(f"{what}: cannot reach the API server: {exc}") from exc

    def read(self, ref: ObjectRef) -> Json:
        readers = {
            "Deployment": self.apps.read_namespaced_deployment,
            "Service": self.core.read_namespaced_service,
            "ConfigMap": self.core.read_namespaced_config_map,
        }
        obj = self._json(self._call(f"read {ref}", readers[ref.kind], ref.name, ref.namespace))
        obj.setdefault("kind", ref.kind)
        return obj

    def patch(self, ref: ObjectRef, patch: Patch) -> Json:
        patchers = {
            "Deployment": self.apps.patch_namespaced_deployment,
            "Service": self.core.patch_namespaced_service,
            "ConfigMap": self.core.patch_namespaced_config_map,
        }
        result = self._call(
            f"patch {ref}",
            patchers[ref.kind],
            ref.name,
            ref.namespace,
            patch.body,
            _content_type=_CONTENT_TYPES[patch.style],
        )
        obj = self._json(result)
        obj.setdefault("kind", ref.kind)
        return obj

    def list_pods(self, namespace: str, *, selector: str) -> list[Json]:
        pods = self._call(
            f"list pods in {namespace}", self.core.list_namespaced_pod, namespace, label_selector=selector
        )
        return [self._json(pod) for pod in pods.items]

    def list_nodes(self) -> list[Json]:
        return [self._json(node) for node in self._call("list nodes", self.core.list_node).items]

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
