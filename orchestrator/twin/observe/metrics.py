"""The series a real cluster's Prometheus would scrape, collected from the twin at one instant.

Names and labels are the series contract's (``orchestrator/vocabulary/series.py``, described in
alert_rules/SERIES.md): OpenTelemetry span metrics, kube-state-metrics, cAdvisor and the datastore exporters,
whose series per datastore kind come from the contract's table. Every function here is pure over the
objects and the model's accumulators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import accumulate, chain, islice, repeat
from typing import Any

from orchestrator.catalog.topology import Call, Topology
from orchestrator.twin.model.datastores import DatastoreStats
from orchestrator.twin.model.engine import AppModel
from orchestrator.twin.model.spans import BUCKETS_MS, CLIENT, SpanKey, SpanMetrics
from orchestrator.vocabulary.series import EXPORTERS, Backlog, Quantity

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]  # metric name, sorted labels, value
Key = tuple[str, Labels]  # metric name, sorted labels: one series

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_LE = tuple(f"{b:g}" for b in BUCKETS_MS) + ("+Inf",)
_CALLS = "traces_span_metrics_calls_total"
_SUM = "traces_span_metrics_duration_milliseconds_sum"
_COUNT = "traces_span_metrics_duration_milliseconds_count"
_BUCKET = "traces_span_metrics_duration_milliseconds_bucket"


def _labels(**values: str) -> Labels:
    return tuple(sorted(values.items()))


def _span_labels(namespace: str, key: SpanKey) -> tuple[Labels, tuple[Labels, ...]]:
    service, span, kind, status = key
    base = {
        "namespace": namespace,
        "service_name": service,
        "span_name": span,
        "span_kind": kind,
        "status_code": status,
    }
    return _labels(**base), tuple(_labels(**base, le=le) for le in _LE)


@lru_cache(maxsize=65536)
def _span_keys(namespace: str, key: SpanKey) -> tuple[Key, ...]:
    """The series of one span key, in the order ``SpanSeries.values`` gives their values: the same key
    objects every time the span keys are listed again, which the comparisons and caches by key object after
    a scrape find at once."""
    base, per_bucket = _span_labels(namespace, key)
    return ((_CALLS, base), (_SUM, base), (_COUNT, base), *zip(repeat(_BUCKET), per_bucket))


class SpanSeries:
    """The span-metric series of one namespace, scrape after scrape: the keys and the ordered rows are
    rebuilt only when a span key has appeared (span keys are never removed), so a scrape only reads values.
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.order: list[SpanKey] = []  # the span keys, sorted
        self.keys: list[Key] = []  # their series, one list shared by every scrape until a key appears
        self._rows: list[list[float]] = []
        self._client: list[tuple[tuple[str, str], list[float]]] = []
        # The CLIENT rows of each operation, by caller, in the order of ``client_calls``.
        self.by_op: dict[str, list[tuple[str, list[float]]]] = {}

    def values(self, spans: SpanMetrics) -> list[float]:
        """One value per series of ``keys`` (refreshed first when a span key has appeared)."""
        if len(spans.series) != len(self.order):
            self.order = sorted(spans.series)
            self._rows = [spans.series[key] for key in self.order]
            # Chained, not a comprehension: compiled (mypyc), a comprehension would unpack each key into a C
            # struct and pack a new tuple, losing the objects the caches find by identity.
            self.keys = list(chain.from_iterable(_span_keys(self.namespace, key) for key in self.order))
            client: dict[tuple[str, str], list[float]] = {}
            for (service, op, kind, _status), row in zip(self.order, self._rows, strict=True):
                if kind == CLIENT:
                    client[(service, op)] = row
            self._client = list(client.items())
            self.by_op = {}
            for (caller, op), row in self._client:
                self.by_op.setdefault(op, []).append((caller, row))
        found: list[float] = []
        extend = found.extend
        for row in self._rows:
            count = row[0]
            extend((count, row[1], count))
            extend(accumulate(islice(row, 2, None)))  # the cumulative buckets, ending with +Inf
        return found

    def client_calls(self) -> dict[tuple[str, str], float]:
        """Calls per (caller, operation) of the CLIENT span keys as of the last ``values``, in key order; of a
        call's span keys the last in that order (its OK status) gives the count."""
        return {pair: row[0] for pair, row in self._client}


def _owner(pod: dict[str, Any]) -> tuple[str, str]:
    for ref in pod["metadata"].get("ownerReferences") or []:
        return str(ref.get("kind", "")), str(ref.get("name", ""))
    return "<none>", "<none>"


def pod_samples(pods: list[dict[str, Any]], namespace: str) -> Iterable[Sample]:
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        kind, owner = _owner(pod)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        yield (
            "kube_pod_info",
            _labels(namespace=namespace, pod=name, node=node, created_by_kind=kind, created_by_name=owner),
            1.0,
        )
        phase = str(status.get("phase") or "Pending")
        for candidate in PHASES:
            yield (
                "kube_pod_status_phase",
                _labels(namespace=namespace, pod=name, phase=candidate),
                float(candidate == phase),
            )
        ready = next(
            (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "Unknown"
        )
        for condition, value in (("true", "True"), ("false", "False"), ("unknown", "Unknown")):
            yield (
                "kube_pod_status_ready",
                _labels(namespace=namespace, pod=name, condition=condition),
                float(ready == value),
            )
        for cs in status.get("containerStatuses") or []:
            container = str(cs.get("name", ""))
            base = {"namespace": namespace, "pod": name, "container": container}
            yield (
                "kube_pod_container_status_restarts_total",
                _labels(**base),
                float(cs.get("restartCount", 0)),
            )
            waiting = (cs.get("state") or {}).get("waiting")
            if waiting is not None and waiting.get("reason"):
                yield (
                    "kube_pod_container_status_waiting_reason",
                    _labels(**base, reason=str(waiting["reason"])),
                    1.0,
                )
            terminated = (cs.get("lastState") or {}).get("terminated")
            if terminated is not None and terminated.get("reason"):
                yield (
                    "kube_pod_container_status_last_terminated_reason",
                    _labels(**base, reason=str(terminated["reason"])),
                    1.0,
                )


def deployment_samples(deployments: list[dict[str, Any]], namespace: str) -> Iterable[Sample]:
    for deployment in deployments:
        meta, spec, status = (
            deployment["metadata"],
            deployment.get("spec") or {},
            deployment.get("status") or {},
        )
        base = _labels(namespace=namespace, deployment=meta["name"])
        replicas = spec.get("replicas")
        yield "kube_deployment_spec_replicas", base, float(1 if replicas is None else replicas)
        yield "kube_deployment_status_replicas_available", base, float(status.get("availableReplicas", 0))
        yield "kube_deployment_status_replicas_unavailable", base, float(status.get("unavailableReplicas", 0))
        yield "kube_deployment_status_replicas_updated", base, float(status.get("updatedReplicas", 0))
        yield "kube_deployment_metadata_generation", base, float(meta.get("generation", 1))
        yield "kube_deployment_status_observed_generation", base, float(status.get("observedGeneration", 0))


def statefulset_samples(statefulsets: list[dict[str, Any]], namespace: str) -> Iterable[Sample]:
    for sts in statefulsets:
        meta, spec, status = sts["metadata"], sts.get("spec") or {}, sts.get("status") or {}
        base = _labels(namespace=namespace, statefulset=meta["name"])
        replicas = spec.get("replicas")
        yield "kube_statefulset_replicas", base, float(1 if replicas is None else replicas)
        yield "kube_statefulset_status_replicas_ready", base, float(status.get("readyReplicas", 0))
        yield "kube_statefulset_status_replicas_updated", base, float(status.get("updatedReplicas", 0))
        yield "kube_statefulset_metadata_generation", base, float(meta.get("generation", 1))
        yield "kube_statefulset_status_observed_generation", base, float(status.get("observedGeneration", 0))


def node_samples(nodes: list[dict[str, Any]]) -> Iterable[Sample]:
    for node in nodes:
        name = node["metadata"]["name"]
        zone = str((node["metadata"].get("labels") or {}).get("topology.kubernetes.io/zone", ""))
        yield "kube_node_labels", _labels(node=name, label_topology_kubernetes_io_zone=zone), 1.0
        conditions = {
            c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []
        }
        for condition in ("Ready", "MemoryPressure", "DiskPressure"):
            actual = conditions.get(condition, "Unknown")
            for status, value in (("true", "True"), ("false", "False"), ("unknown", "Unknown")):
                yield (
                    "kube_node_status_condition",
                    _labels(node=name, condition=condition, status=status),
                    float(actual == value),
                )


_CPU = "container_cpu_usage_seconds_total"
_WORKING_SET = "container_memory_working_set_bytes"
_LIMIT = "container_spec_memory_limit_bytes"
_PERIODS = "container_cpu_cfs_periods_total"
_THROTTLED = "container_cpu_cfs_throttled_periods_total"
MAX_CACHED_CONTAINERS = 4096


def _walk(calls: tuple[Call, ...]) -> Iterable[Call]:
    for call in calls:
        yield call
        yield from _walk(call.calls)


# A datastore's own setting an exporter reports (the server's default), not something the model tracks.
MAX_CONNECTIONS = {"mysql": 151.0, "postgresql": 100.0}
_READINGS: dict[Quantity, Callable[[DatastoreStats, str], float]] = {
    "up": lambda stats, kind: 1.0 if stats.up else 0.0,
    "clients": lambda stats, kind: float(stats.clients),
    "memory": lambda stats, kind: stats.memory,
    "memory_limit": lambda stats, kind: stats.memory_limit,
    "slow": lambda stats, kind: stats.slow,
    "max_connections": lambda stats, kind: MAX_CONNECTIONS[kind],
}


def datastore_samples(
    model: AppModel,
    namespace: str,
    *,
    by_op: dict[str, list[tuple[str, list[float]]]],
    ops: dict[str, set[str]],
) -> Iterable[Sample]:
    """Each datastore's exporter series, as the contract's table of exporters lists them per kind; ``by_op``
    is ``SpanSeries.by_op`` (the calls of each operation are the first value of its rows), ``ops`` the
    operations called on each datastore (``ops_called``)."""
    for name, stats in sorted(model.datastores.items()):
        service = model.services[name]
        kind = service.datastore_kind or ""
        exporter = EXPORTERS.get(kind)
        if exporter is None:
            continue
        base = {"namespace": namespace, "service": name}
        for gauge in exporter.gauges:
            yield gauge.series, _labels(**base), _READINGS[gauge.quantity](stats, kind)
        if exporter.commands is not None:
            for op in sorted(ops.get(name, ())):
                count = sum(row[0] for caller, row in by_op.get(op, ()) if caller != name)
                labels = _labels(**base, cmd=op.split()[0].lower())
                yield exporter.commands.count, labels, count
                yield exporter.commands.seconds, labels, count * service.model.base_latency_ms / 1000.0
        if exporter.backlog is not None:
            yield from _backlog_samples(exporter.backlog, base, stats)


def ops_called(topology: Topology) -> dict[str, set[str]]:
    """The operations called on each service by the routes and background flows (no side effects)."""
    ops: dict[str, set[str]] = {}
    for calls in [r.calls for r in topology.routes] + [f.calls for f in topology.background]:
        for call in _walk(calls):
            ops.setdefault(call.to, set()).add(call.op)
    return ops


def _backlog_samples(backlog: Backlog, base: dict[str, str], stats: DatastoreStats) -> Iterable[Sample]:
    for (group, queue), lag in sorted(stats.lag.items()):
        labels = {**base, backlog.queue_label: queue, **dict(backlog.fixed)}
        if backlog.group_label is not None:
            labels[backlog.group_label] = group
        yield backlog.series, _labels(**labels), lag


class Scraper:
    """The series of one twin's namespace at each scrape, as a column of keys and one of values. What stays
    the same from one scrape to the next (the span series, the operations called on each datastore, the
    series of an object whose resourceVersion has not moved) is worked out once; every value the model
    holds is read afresh."""

    def __init__(self, model: AppModel, namespace: str) -> None:
        self.model = model
        self.namespace = namespace
        self.spans = SpanSeries(namespace)
        self.ops = ops_called(model.topology)
        # Per object kind: uid -> (resourceVersion, its keys, its values) as of the last scrape.
        self._objects: dict[str, dict[str, tuple[str, list[Key], list[float]]]] = {}
        self._containers: dict[tuple[str, str, bool, bool], list[Key]] = {}

    def collect(
        self,
        *,
        pods: list[dict[str, Any]],
        deployments: list[dict[str, Any]],
        statefulsets: list[dict[str, Any]],
        nodes: list[dict[str, Any]],
    ) -> tuple[list[Key], list[float]]:
        """Keys and values of every series: span metrics, pods, Deployments, StatefulSets, nodes, containers,
        datastores."""
        model, namespace = self.model, self.namespace
        values = self.spans.values(model.spans)
        keys = list(self.spans.keys)
        for kind, objects, samples in (
            ("pods", pods, lambda obj: pod_samples([obj], namespace)),
            ("deployments", deployments, lambda obj: deployment_samples([obj], namespace)),
            ("statefulsets", statefulsets, lambda obj: statefulset_samples([obj], namespace)),
            ("nodes", nodes, lambda obj: node_samples([obj])),
        ):
            self._object_series(kind, objects, samples, keys, values)
        self._container_series(keys, values)
        for name, labels, value in datastore_samples(model, namespace, by_op=self.spans.by_op, ops=self.ops):
            keys.append((name, labels))
            values.append(value)
        return keys, values

    def _object_series(
        self,
        kind: str,
        objects: list[dict[str, Any]],
        samples: Callable[[dict[str, Any]], Iterable[Sample]],
        keys: list[Key],
        values: list[float],
    ) -> None:
        """Append the series of ``objects``, each worked out anew only when its resourceVersion moved: they
        are read from the object alone."""
        last = self._objects.get(kind, {})
        kept: dict[str, tuple[str, list[Key], list[float]]] = {}
        for obj in objects:
            meta = obj["metadata"]
            uid, version = str(meta.get("uid", meta["name"])), str(meta.get("resourceVersion", ""))
            found = last.get(uid)
            if found is None or found[0] != version or not version:
                listed = list(samples(obj))
                found = (version, [(name, labels) for name, labels, _ in listed], [v for _, _, v in listed])
            kept[uid] = found
            keys.extend(found[1])
            values.extend(found[2])
        self._objects[kind] = kept

    def _container_series(self, keys: list[Key], values: list[float]) -> None:
        """Append the cAdvisor series of every running container (CPU, working set, and the memory limit and
        CFS periods where it has them), their keys kept from one scrape to the next."""
        namespace = self.namespace
        cached = self._containers
        if len(cached) > MAX_CACHED_CONTAINERS:
            cached.clear()  # containers of deleted pods leave their keys behind; start afresh now and then
        for (pod, container), usage in sorted(self.model.usage.items()):
            limit, periods = usage.memory_limit, bool(usage.periods)
            found = cached.get((pod, container, limit is not None, periods))
            if found is None:
                base = _labels(namespace=namespace, pod=pod, container=container)
                names = [_CPU, _WORKING_SET]
                names += [_LIMIT] if limit is not None else []
                names += [_PERIODS, _THROTTLED] if periods else []
                found = [(name, base) for name in names]
                cached[(pod, container, limit is not None, periods)] = found
            keys.extend(found)
            values.append(usage.cpu_seconds)
            values.append(usage.working_set)
            if limit is not None:
                values.append(limit)
            if periods:
                values.append(usage.periods)
                values.append(usage.throttled_periods)
