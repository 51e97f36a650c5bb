"""Defaulting as the API server does it on create and update, so stored objects look like a real cluster's.

Templates matter most: a ReplicaSet copies the defaulted template, and ``kubectl rollout undo`` patches a
Deployment back to it, so both must default identically for the controller to recognise the old revision.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = str(container.get("image", ""))
    last = image.rsplit("/", 1)[-1]
    untagged = ":" not in last and "@" not in image
    container.setdefault(
        "imagePullPolicy", "Always" if untagged or last.endswith(":latest") else "IfNotPresent"
    )
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            for key, value in (
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ):
                probe.setdefault(key, value)
            grpc = probe.get("grpc")
            if isinstance(grpc, dict):
                grpc.setdefault("service", "")  # kubectl describe dereferences it
            http = probe.get("httpGet")
            if isinstance(http, dict):
                http.setdefault("scheme", "HTTP")
                http.setdefault("path", "/")


def pod_spec(spec: Obj) -> None:
    """Default a pod spec in place (the caller owns it)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in spec.get("containers") or []:
        if isinstance(container, dict):
            _container(container)
    for container in spec.get("initContainers") or []:
        if isinstance(container, dict):
            _container(container)


def _template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        template.setdefault("metadata", {})
        if isinstance(template.get("spec"), dict):
            pod_spec(template["spec"])


def deployment(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _rolling_update(spec.setdefault("strategy", {}), maxSurge="25%", maxUnavailable="25%")
    _template(spec)


def replicaset(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        _template(spec)


def pod(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        pod_spec(spec)
        spec.setdefault("serviceAccountName", spec.get("serviceAccount", "default"))
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        spec.setdefault(
            "tolerations",
            [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
        )


class ServiceDefaults:
    """Allocates cluster IPs from 10.96.0.0/12 in order, as a fresh cluster hands them out."""

    def __init__(self) -> None:
        self._next = 11  # 10.96.0.1 is the kubernetes Service, 10.96.0.10 kube-dns
        self._next_node_port = 30000

    def allocate(self) -> str:
        index = self._next
        self._next += 1
        return f"10.96.{index // 254}.{index % 254 + 1}" if index >= 254 else f"10.96.0.{index}"

    def _allocate_node_port(self) -> int:
        port = self._next_node_port
        self._next_node_port = port + 1 if port < 32767 else 30000
        return port

    def __call__(self, obj: Obj, old: Obj | None) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
        if spec["type"] in ("NodePort", "LoadBalancer"):
            kept = {
                p.get("port"): p.get("nodePort") for p in ((old or {}).get("spec") or {}).get("ports") or []
            }
            for port in spec.get("ports") or []:
                if isinstance(port, dict) and not port.get("nodePort"):
                    port["nodePort"] = kept.get(port.get("port")) or self._allocate_node_port()
            spec.setdefault("externalTrafficPolicy", "Cluster")
        old_ip = ((old or {}).get("spec") or {}).get("clusterIP")
        if spec.get("clusterIP") in (None, ""):
            spec["clusterIP"] = old_ip or self.allocate()
        spec.setdefault("clusterIPs", [spec["clusterIP"]])


def namespace(obj: Obj) -> None:
    """A namespace is Active from birth and labelled with its own name, as the API server does."""
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        labels = meta.setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = meta["name"]
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])
    obj["status"] = {"phase": "Active"}


def _rolling_update(strategy: object, **limits: object) -> None:
    """A strategy that is a RollingUpdate unless it says otherwise, with the kind's default limits."""
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                for key, value in limits.items():
                    rolling.setdefault(key, value)


def daemonset(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("revisionHistoryLimit", 10)
    _rolling_update(spec.setdefault("updateStrategy", {}), maxUnavailable=1, maxSurge=0)
    _template(spec)


def statefulset(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    _rolling_update(spec.setdefault("updateStrategy", {}), partition=0)
    _template(spec)


def replication_controller(obj: Obj) -> None:
    """A ReplicationController's selector and labels default to its template's labels, as upstream."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("minReadySeconds", 0)
    _template(spec)
    template = spec.get("template")
    template_labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if isinstance(template_labels, dict) and template_labels:
        if not spec.get("selector"):
            spec["selector"] = dict(template_labels)
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and not meta.get("labels"):
            meta["labels"] = dict(template_labels)


def service_status(_obj: Obj) -> Obj:
    return {"loadBalancer": {}}


def replication_controller_status(_obj: Obj) -> Obj:
    return {"replicas": 0}


def statefulset_status(_obj: Obj) -> Obj:
    return {"replicas": 0, "availableReplicas": 0}


def daemonset_status(_obj: Obj) -> Obj:
    return {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
