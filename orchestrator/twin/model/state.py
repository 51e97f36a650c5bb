"""The cluster as the application model sees it in one step: workloads, pods, Services, config, chaos.

Built from plain object dicts (exactly as the API serves them) by ``snapshot``; everything downstream is a
pure function of a Snapshot, so the model can be tested on hand-written dicts.
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.twin.timefmt import parse_rfc3339
from orchestrator.vocabulary.quantities import quantity

Obj = dict[str, Any]


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    image: str
    env: Mapping[str, str | None]  # None: declared but empty or unresolvable
    cpu_limit: float | None
    memory_limit: float | None
    memory_request: float | None
    cpu_request: float | None
    ports: Mapping[str, int]  # port name (or str(number)) -> number
    readiness_port: str | None  # as written: a number or a port name
    liveness_port: str | None
    command: tuple[str, ...] = ()  # as written in the pod spec; empty: the image's entrypoint
    args: tuple[str, ...] = ()  # as written; empty: the image's default command


@dataclass(frozen=True)
class PodView:
    name: str
    uid: str
    workload: str  # the Deployment/StatefulSet that owns it
    node: str
    ip: str
    labels: Mapping[str, str]
    phase: str
    ready: bool
    deleting: bool
    containers: tuple[ContainerSpec, ...]
    started: Mapping[str, float]  # container name -> start time of the running attempt
    created: float

    def container(self, name: str) -> ContainerSpec | None:
        for spec in self.containers:
            if spec.name == name:
                return spec
        return self.containers[0] if self.containers else None


@dataclass(frozen=True)
class ServiceView:
    name: str
    cluster_ip: str
    selector: Mapping[str, str]
    ports: tuple[tuple[int, str], ...]  # (port, targetPort as written)


@dataclass(frozen=True)
class ChaosObject:
    kind: str
    namespace: str
    name: str
    uid: str
    created: float
    spec: Mapping[str, Any]
    annotations: Mapping[str, str]


@dataclass
class Snapshot:
    namespace: str
    now: float
    pods: dict[str, list[PodView]] = field(default_factory=dict)  # by workload
    replicas: dict[str, int] = field(default_factory=dict)  # spec.replicas by workload
    services: dict[str, ServiceView] = field(default_factory=dict)
    configmaps: dict[str, Mapping[str, str]] = field(default_factory=dict)
    secrets: dict[str, Mapping[str, str]] = field(default_factory=dict)
    chaos: list[ChaosObject] = field(default_factory=list)
    version: str = ""  # resourceVersions of the configmaps and secrets the env was resolved from
    _endpoints: dict[str, list[PodView]] = field(default_factory=dict)
    _by_label: dict[tuple[str, str], list[PodView]] = field(default_factory=dict)

    def all_pods(self) -> Iterable[PodView]:
        for name in sorted(self.pods):
            yield from self.pods[name]


def _quantities(resources: Obj | None, which: str) -> Obj:
    return ((resources or {}).get(which) or {}) if isinstance(resources, dict) else {}


def _env(
    container: Obj, *, secrets: Mapping[str, Mapping[str, str]], configmaps: Mapping[str, Mapping[str, str]]
) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for item in container.get("env") or []:
        name = item.get("name")
        if not name:
            continue
        if "value" in item:
            value = item.get("value")
            found[name] = str(value) if value not in (None, "") else None
            continue
        source = item.get("valueFrom") or {}
        ref = source.get("secretKeyRef") or source.get("configMapKeyRef")
        if ref is None:
            found[name] = None
            continue
        table = secrets if "secretKeyRef" in source else configmaps
        found[name] = (table.get(ref.get("name", "")) or {}).get(ref.get("key", "")) or None
    return found


def _probe_port(probe: Obj | None) -> str | None:
    if not probe:
        return None
    for kind in ("httpGet", "tcpSocket", "grpc"):
        if kind in probe and isinstance(probe[kind], dict) and "port" in probe[kind]:
            return str(probe[kind]["port"])
    return None


def container_spec(
    container: Obj,
    *,
    secrets: Mapping[str, Mapping[str, str]] | None = None,
    configmaps: Mapping[str, Mapping[str, str]] | None = None,
) -> ContainerSpec:
    """A container of a pod spec as the model needs it (no side effects)."""
    resources = container.get("resources")
    ports: dict[str, int] = {}
    for port in container.get("ports") or []:
        number = int(port.get("containerPort", 0))
        ports[str(number)] = number
        if port.get("name"):
            ports[str(port["name"])] = number
    return ContainerSpec(
        name=str(container.get("name", "")),
        image=str(container.get("image", "")),
        env=_env(container, secrets=secrets or {}, configmaps=configmaps or {}),
        cpu_limit=quantity(_quantities(resources, "limits").get("cpu")),
        memory_limit=quantity(_quantities(resources, "limits").get("memory")),
        cpu_request=quantity(_quantities(resources, "requests").get("cpu")),
        memory_request=quantity(_quantities(resources, "requests").get("memory")),
        ports=ports,
        readiness_port=_probe_port(container.get("readinessProbe")),
        liveness_port=_probe_port(container.get("livenessProbe")),
        command=tuple(str(part) for part in container.get("command") or ()),
        args=tuple(str(part) for part in container.get("args") or ()),
    )


def _time(text: Any) -> float:
    return parse_rfc3339(str(text)) if text else 0.0


def pod_view(
    pod: Obj,
    *,
    workload: str,
    secrets: Mapping[str, Mapping[str, str]],
    configmaps: Mapping[str, Mapping[str, str]],
) -> PodView:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    started: dict[str, float] = {}
    for cs in status.get("containerStatuses") or []:
        running = (cs.get("state") or {}).get("running")
        if running is not None:
            started[cs["name"]] = _time(running.get("startedAt"))
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return PodView(
        name=meta["name"],
        uid=str(meta.get("uid", meta["name"])),
        workload=workload,
        node=str(spec.get("nodeName") or ""),
        ip=str(status.get("podIP") or ""),
        labels=dict(meta.get("labels") or {}),
        phase=str(status.get("phase") or "Pending"),
        ready=ready and status.get("phase") == "Running",
        deleting=bool(meta.get("deletionTimestamp")),
        containers=tuple(
            container_spec(c, secrets=secrets, configmaps=configmaps) for c in spec.get("containers") or []
        ),
        started=started,
        created=_time(meta.get("creationTimestamp")),
    )


def _matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    # Item views compare as sets, in C: every pair of the selector is one of the labels.
    return bool(selector) and selector.items() <= labels.items()


_Endpoints = dict[str, list[PodView]]
_ByLabel = dict[tuple[str, str], list[PodView]]


def _same_objects(a: Iterable[object], b: Iterable[object]) -> bool:
    return all(map(operator.is_, a, b))


class ViewCache:
    """Pod views by (uid, resourceVersion, config version): a pod's view changes only when it does."""

    def __init__(self) -> None:
        self._views: dict[str, tuple[tuple[str, str], PodView]] = {}
        # The ConfigMaps' and Secrets' data of the last snapshot, by their resourceVersions.
        self.config: tuple[str, dict[str, Mapping[str, str]], dict[str, Mapping[str, str]]] | None = None
        # Service views by uid, with the resourceVersion each was made from.
        self.services: dict[str, tuple[str, ServiceView]] = {}
        # The pod views and Service views of the last snapshot, with the maps its endpoints are worked out in.
        self.served: tuple[list[PodView], dict[str, ServiceView], _Endpoints, _ByLabel] | None = None

    def view(
        self,
        pod: Obj,
        *,
        workload: str,
        version: str,
        secrets: Mapping[str, Mapping[str, str]],
        configmaps: Mapping[str, Mapping[str, str]],
    ) -> PodView:
        meta = pod["metadata"]
        key = (str(meta.get("resourceVersion", "")) + "/" + workload, version)
        uid = str(meta.get("uid", meta["name"]))
        found = self._views.get(uid)
        if found is not None and found[0] == key and key[0] != "/" + workload:
            return found[1]
        view = pod_view(pod, workload=workload, secrets=secrets, configmaps=configmaps)
        self._views[uid] = (key, view)
        return view

    def __len__(self) -> int:
        return len(self._views)

    def clear(self) -> None:
        self._views.clear()

    def keep(self, uids: set[str]) -> None:
        for uid in [u for u in self._views if u not in uids]:
            del self._views[uid]


def snapshot(
    *,
    namespace: str,
    now: float,
    workloads: list[Obj],
    pods: list[Obj],
    services: list[Obj],
    configmaps: list[Obj],
    secrets: list[Obj],
    chaos: list[Obj],
    cache: ViewCache | None = None,
) -> Snapshot:
    """Assemble the model's view of one namespace from object dicts (no side effects).

    ``chaos`` may hold Chaos Mesh objects of any namespace: their selectors decide what they touch.
    """
    version = ",".join(str(o["metadata"].get("resourceVersion", "")) for o in (*configmaps, *secrets))
    if cache is not None and cache.config is not None and cache.config[0] == version and version:
        _, cms, secret_data = cache.config  # no ConfigMap or Secret changed: their data are the same
    else:
        cms = {
            c["metadata"]["name"]: {k: str(v) for k, v in (c.get("data") or {}).items()} for c in configmaps
        }
        secret_data = {}
        for secret in secrets:
            data = secret.get("data") or {}
            values = {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
            values.update({k: str(v) for k, v in (secret.get("stringData") or {}).items()})
            secret_data[secret["metadata"]["name"]] = values
        if cache is not None:
            cache.config = (version, cms, secret_data)
    shot = Snapshot(namespace=namespace, now=now, configmaps=dict(cms), secrets=dict(secret_data))
    selectors: list[tuple[str, dict[str, str]]] = []
    for workload in workloads:
        name = workload["metadata"]["name"]
        spec = workload.get("spec") or {}
        shot.replicas[name] = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        selectors.append((name, dict((spec.get("selector") or {}).get("matchLabels") or {})))
        shot.pods[name] = []
    index: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
    for name, sel in selectors:
        if sel:
            index.setdefault(min(sel.items()), []).append((name, sel))
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        candidates = (n for item in labels.items() for n, sel in index.get(item, ()) if _matches(sel, labels))
        owner = next(candidates, None)
        if owner is None:
            continue
        if cache is not None:
            view = cache.view(pod, workload=owner, version=version, secrets=secret_data, configmaps=cms)
        else:
            view = pod_view(pod, workload=owner, secrets=secret_data, configmaps=cms)
        shot.pods[owner].append(view)
    shot.version = version
    if cache is not None:
        cache.keep({str(p["metadata"].get("uid", p["metadata"]["name"])) for p in pods})
    known = cache.services if cache is not None else {}
    kept: dict[str, tuple[str, ServiceView]] = {}
    for svc in services:
        meta = svc["metadata"]
        uid, version = str(meta.get("uid", meta["name"])), str(meta.get("resourceVersion", ""))
        found = known.get(uid)
        if found is None or found[0] != version or not version:
            found = (version, service_view(svc))
        kept[uid] = found
        shot.services[found[1].name] = found[1]
    if cache is not None:
        cache.services = kept
        _endpoints_of_last(cache, shot)
    for obj in chaos:
        meta = obj["metadata"]
        shot.chaos.append(
            ChaosObject(
                kind=str(obj.get("kind")),
                namespace=str(meta.get("namespace") or ""),
                name=meta["name"],
                uid=str(meta.get("uid", meta["name"])),
                created=_time(meta.get("creationTimestamp")),
                spec=obj.get("spec") or {},
                annotations=dict(meta.get("annotations") or {}),
            )
        )
    shot.chaos.sort(key=lambda c: (c.created, c.kind, c.name))
    return shot


def service_view(svc: Obj) -> ServiceView:
    """A Service as the model needs it (no side effects)."""
    spec = svc.get("spec") or {}
    ports = tuple(
        (int(p.get("port", 0)), str(p.get("targetPort", p.get("port", 0)))) for p in spec.get("ports") or []
    )
    return ServiceView(
        name=svc["metadata"]["name"],
        cluster_ip=str(spec.get("clusterIP") or ""),
        selector=dict(spec.get("selector") or {}),
        ports=ports,
    )


def _endpoints_of_last(cache: ViewCache, shot: Snapshot) -> None:
    """Let ``shot`` work out its endpoints in the maps of the last snapshot when it holds the same pod views
    and Service views (the same objects: a view is made anew when its object changes), as the endpoints are
    a function of those alone; most steps change neither."""
    pods = [view for views in shot.pods.values() for view in views]
    last = cache.served
    if (
        last is not None
        and len(last[0]) == len(pods)
        and _same_objects(last[0], pods)
        and last[1].keys() == shot.services.keys()
        and _same_objects(last[1].values(), (shot.services[name] for name in last[1]))
    ):
        shot._endpoints, shot._by_label = last[2], last[3]
    cache.served = (pods, dict(shot.services), shot._endpoints, shot._by_label)


def endpoints(shot: Snapshot, service: str) -> list[PodView]:
    """Ready pods behind a Service, by its selector, in name order (no side effects)."""
    cached = shot._endpoints.get(service)
    if cached is not None:
        return cached
    view = shot.services.get(service)
    if view is None:
        return []
    if not view.selector:
        return []
    if not shot._by_label:
        for pods in shot.pods.values():
            for pod in pods:
                if pod.ready and not pod.deleting:
                    for item in pod.labels.items():
                        shot._by_label.setdefault(item, []).append(pod)
    candidates = shot._by_label.get(min(view.selector.items()), [])
    found = [p for p in candidates if _matches(view.selector, p.labels)]
    found.sort(key=lambda p: p.name)
    shot._endpoints[service] = found
    return found
