"""What kube-controller-manager puts in every namespace: the ``default`` ServiceAccount (the serviceaccount
controller) and the ``kube-root-ca.crt`` ConfigMap (the root-ca-cert-publisher).

Both are recreated when deleted and the ConfigMap is rewritten when its CA differs, as upstream. The
ConfigMap exists only once the cluster has a CA to publish, i.e. once its API server is served.
"""

from __future__ import annotations

from orchestrator.twin.resources import ResourceType, by_plural
from orchestrator.twin.store import NAMESPACES, Obj, Store

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DEFAULT_SERVICE_ACCOUNT = "default"
_ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such "
    "as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters."
)


def _must(plural: str) -> ResourceType:
    found = by_plural("", plural)
    assert found is not None, plural
    return found


SERVICE_ACCOUNTS = _must("serviceaccounts")
CONFIGMAPS = _must("configmaps")


class NamespaceDefaultsController:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.root_ca = ""  # PEM of the CA the API server's certificate chains to; "" until served
        self._seen = -1

    def publish_root_ca(self, pem: str) -> None:
        self.root_ca = pem
        self._seen = -1

    def sync(self) -> None:
        store = self.store
        if self._seen >= 0 and not store.changed_since(self._seen, NAMESPACES, SERVICE_ACCOUNTS, CONFIGMAPS):
            return
        for namespace in store.list(NAMESPACES):
            meta = namespace["metadata"]
            if meta.get("deletionTimestamp") or (namespace.get("status") or {}).get("phase") == "Terminating":
                continue
            name = meta["name"]
            if store.find(SERVICE_ACCOUNTS, name, DEFAULT_SERVICE_ACCOUNT) is None:
                store.create(SERVICE_ACCOUNTS, _service_account(name))
            if self.root_ca:
                self._publish(name)
        self._seen = store.resource_version

    def _publish(self, namespace: str) -> None:
        current = self.store.find(CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP)
        wanted = {"ca.crt": self.root_ca}
        if current is None:
            self.store.create(CONFIGMAPS, _root_ca_configmap(namespace, wanted))
        elif current.get("data") != wanted:
            self.store.put(CONFIGMAPS, {**current, "data": wanted})


def _service_account(namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace},
    }


def _root_ca_configmap(namespace: str, data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": namespace,
            "annotations": {"kubernetes.io/description": _ROOT_CA_DESCRIPTION},
        },
        "data": data,
    }
