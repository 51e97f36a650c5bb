"""The endpoints controller: Endpoints and EndpointSlices of every selector Service, from its pods."""

from __future__ import annotations

from orchestrator.twin.controllers.replicasets import pod_ready
from orchestrator.twin.selectors import labels_match, selector_from_match
from orchestrator.twin.store import ENDPOINT_SLICES, ENDPOINTS, PODS, SERVICES, Obj, Store
from orchestrator.twin.timefmt import rfc3339


def _target_port(port: Obj, pods: list[Obj]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for pod in pods:
        for container in pod["spec"].get("containers") or []:
            for declared in container.get("ports") or []:
                if declared.get("name") == target:
                    return int(declared["containerPort"])
    return None


def _address(pod: Obj) -> Obj:
    meta = pod["metadata"]
    return {
        "ip": pod["status"]["podIP"],
        "nodeName": pod["spec"].get("nodeName"),
        "targetRef": {
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        },
    }


class EndpointsController:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._synced = -1
        self._slices: dict[str, str] = {}  # service uid -> the name of its EndpointSlice
        self._members: dict[str, set[str]] = {}  # service uid -> uids of the pods last written for it

    def sync(self, now: float) -> None:
        if not self.store.changed_since(self._synced, PODS, SERVICES, ENDPOINTS):
            return
        changed = self._changed_pods()
        changed_uids: set[str] = set()
        # The changed pods' label sets once each per namespace: pods of one workload share theirs.
        changed_labels: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, str] | None] = {}
        for p in changed or ():
            meta = p["metadata"]
            changed_uids.add(meta["uid"])
            labels = meta.get("labels")
            changed_labels.setdefault((meta["namespace"], tuple((labels or {}).items())), labels)
        by_namespace: dict[str, list[Obj]] = {}
        for pod in self.store.values(PODS):
            if (pod.get("status") or {}).get("podIP") and not pod["metadata"].get("deletionTimestamp"):
                by_namespace.setdefault(pod["metadata"]["namespace"], []).append(pod)
        for service in self.store.list(SERVICES):
            selector = (service.get("spec") or {}).get("selector")
            if not selector:
                continue  # endpoints of a selector-less service are written by hand
            uid, namespace = service["metadata"]["uid"], service["metadata"]["namespace"]
            requirements = selector_from_match({"matchLabels": selector})
            if (
                changed is not None
                and changed_uids.isdisjoint(self._members.get(uid, ()))
                and not any(
                    ns == namespace and labels_match(requirements, labels)
                    for (ns, _), labels in changed_labels.items()
                )
            ):
                continue  # none of its pods, old or new, changed since the last sync
            pods = sorted(
                (
                    p
                    for p in by_namespace.get(namespace, [])
                    if labels_match(requirements, p["metadata"].get("labels"))
                ),
                key=lambda p: tuple(int(x) for x in p["status"]["podIP"].split(".")),
            )
            self._write(service, pods, now)
            self._write_slice(service, pods, now)
            self._members[uid] = {p["metadata"]["uid"] for p in pods}
        self._forget_deleted_services()
        self._synced = self.store.resource_version

    def _changed_pods(self) -> list[Obj] | None:
        """Pods written since the last sync; None when a full pass is needed (services or endpoints
        changed, or the change history no longer reaches back)."""
        if self._synced < 0 or self.store.changed_since(self._synced, SERVICES, ENDPOINTS):
            return None
        changes = self.store.changes_since(self._synced)
        if changes is None:
            return None
        return [c.obj for c in changes if c.group == PODS.group and c.plural == PODS.plural]

    def _forget_deleted_services(self) -> None:
        alive = {s["metadata"]["uid"] for s in self.store.values(SERVICES)}
        self._members = {uid: members for uid, members in self._members.items() if uid in alive}
        for uid in [u for u in self._slices if u not in alive]:
            name = self._slices.pop(uid)
            for found in self.store.list(ENDPOINT_SLICES):
                if found["metadata"]["name"] == name:
                    self.store.delete(ENDPOINT_SLICES, found["metadata"]["namespace"], name)
                    endpoints = found["metadata"]["labels"]["kubernetes.io/service-name"]
                    if self.store.find(ENDPOINTS, found["metadata"]["namespace"], endpoints) is not None:
                        self.store.delete(ENDPOINTS, found["metadata"]["namespace"], endpoints)

    def _write_slice(self, service: Obj, pods: list[Obj], now: float) -> None:
        """The EndpointSlice kubectl describe reads: one per service, every pod with its conditions."""
        meta = service["metadata"]
        ports = [
            {
                k: v
                for k, v in (
                    ("name", p.get("name")),
                    ("port", _target_port(p, pods)),
                    ("protocol", p.get("protocol", "TCP")),
                )
                if v is not None
            }
            for p in service["spec"].get("ports") or []
        ]
        endpoints = [
            {
                "addresses": [p["status"]["podIP"]],
                "conditions": {"ready": pod_ready(p), "serving": pod_ready(p), "terminating": False},
                "nodeName": p["spec"].get("nodeName"),
                "targetRef": {
                    "kind": "Pod",
                    "namespace": p["metadata"]["namespace"],
                    "name": p["metadata"]["name"],
                    "uid": p["metadata"]["uid"],
                },
            }
            for p in pods
        ]
        name = self._slices.get(meta["uid"])
        existing = self.store.find(ENDPOINT_SLICES, meta["namespace"], name) if name else None
        if existing is None:
            body: Obj = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": f"{meta['name']}-{self.store.random_suffix()}",
                    "namespace": meta["namespace"],
                    "labels": {
                        "kubernetes.io/service-name": meta["name"],
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Service",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": ports,
            }
            self._slices[meta["uid"]] = self.store.create(ENDPOINT_SLICES, body)["metadata"]["name"]
        elif existing.get("endpoints") != endpoints or existing.get("ports") != ports:
            self.store.put(ENDPOINT_SLICES, {**existing, "endpoints": endpoints, "ports": ports})

    def _write(self, service: Obj, pods: list[Obj], now: float) -> None:
        meta = service["metadata"]
        publish_all = bool(service["spec"].get("publishNotReadyAddresses"))
        ready = [_address(p) for p in pods if publish_all or pod_ready(p)]
        not_ready = [_address(p) for p in pods if not publish_all and not pod_ready(p)]
        ports = []
        for port in service["spec"].get("ports") or []:
            number = _target_port(port, pods)
            if number is not None:
                entry: Obj = {"port": number, "protocol": port.get("protocol", "TCP")}
                if port.get("name"):
                    entry["name"] = port["name"]
                ports.append(entry)
        subsets: list[Obj] = []
        if (ready or not_ready) and ports:
            subset: Obj = {"ports": ports}
            if ready:
                subset["addresses"] = ready
            if not_ready:
                subset["notReadyAddresses"] = not_ready
            subsets.append(subset)
        existing = self.store.find(ENDPOINTS, meta["namespace"], meta["name"])
        labels = dict(meta.get("labels") or {})
        if existing is None:
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": rfc3339(now)},
                },
            }
            if subsets:
                body["subsets"] = subsets
            self.store.create(ENDPOINTS, body)
            return
        if (existing.get("subsets") or []) == subsets and (
            existing["metadata"].get("labels") or {}
        ) == labels:
            return
        annotations = {
            **(existing["metadata"].get("annotations") or {}),
            "endpoints.kubernetes.io/last-change-trigger-time": rfc3339(now),
        }
        updated: Obj = {k: v for k, v in existing.items() if k != "subsets"}
        updated["metadata"] = {**existing["metadata"], "labels": labels, "annotations": annotations}
        if subsets:
            updated["subsets"] = subsets
        self.store.put(ENDPOINTS, updated)
