"""The series contract: every series the twin emits and a real cluster's exporters provide, and its labels.

alert_rules/SERIES.md describes it for people. The catalog's probe check, the rule pack's tests and the
twin's exporters read this table, so a series is in all of them or in none. Every series also carries
``namespace`` except the node series, which belong to no namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Series:
    name: str
    labels: tuple[str, ...]  # besides namespace


_SPAN = ("service_name", "span_name", "span_kind", "status_code")
_POD = ("pod",)
_CONTAINER = ("pod", "container")
_DEPLOYMENT = ("deployment",)
_STATEFULSET = ("statefulset",)

# OpenTelemetry span metrics (the spanmetrics connector's naming).
SPAN_METRICS: tuple[Series, ...] = (
    Series("traces_span_metrics_calls_total", _SPAN),
    Series("traces_span_metrics_duration_milliseconds_sum", _SPAN),
    Series("traces_span_metrics_duration_milliseconds_count", _SPAN),
    Series("traces_span_metrics_duration_milliseconds_bucket", (*_SPAN, "le")),
)
KUBE_STATE_METRICS: tuple[Series, ...] = (
    Series("kube_pod_info", ("pod", "node", "created_by_kind", "created_by_name")),
    Series("kube_pod_status_phase", ("pod", "phase")),
    Series("kube_pod_status_ready", ("pod", "condition")),
    Series("kube_pod_container_status_restarts_total", _CONTAINER),
    Series("kube_pod_container_status_waiting_reason", (*_CONTAINER, "reason")),
    Series("kube_pod_container_status_last_terminated_reason", (*_CONTAINER, "reason")),
    Series("kube_deployment_spec_replicas", _DEPLOYMENT),
    Series("kube_deployment_status_replicas_available", _DEPLOYMENT),
    Series("kube_deployment_status_replicas_unavailable", _DEPLOYMENT),
    Series("kube_deployment_status_replicas_updated", _DEPLOYMENT),
    Series("kube_deployment_metadata_generation", _DEPLOYMENT),
    Series("kube_deployment_status_observed_generation", _DEPLOYMENT),
    Series("kube_statefulset_replicas", _STATEFULSET),
    Series("kube_statefulset_status_replicas_ready", _STATEFULSET),
    Series("kube_statefulset_status_replicas_updated", _STATEFULSET),
    Series("kube_statefulset_metadata_generation", _STATEFULSET),
    Series("kube_statefulset_status_observed_generation", _STATEFULSET),
    Series("kube_node_labels", ("node", "label_topology_kubernetes_io_zone")),
    Series("kube_node_status_condition", ("node", "condition", "status")),
)
CADVISOR: tuple[Series, ...] = (
    Series("container_cpu_usage_seconds_total", _CONTAINER),
    Series("container_memory_working_set_bytes", _CONTAINER),
    Series("container_spec_memory_limit_bytes", _CONTAINER),
    Series("container_cpu_cfs_periods_total", _CONTAINER),
    Series("container_cpu_cfs_throttled_periods_total", _CONTAINER),
)

# What a datastore exporter's gauge reports about its datastore.
Quantity = Literal["up", "clients", "memory", "memory_limit", "slow", "max_connections"]


@dataclass(frozen=True)
class Gauge:
    series: str
    quantity: Quantity


@dataclass(frozen=True)
class Commands:
    """Per-command counters, one series pair per command the datastore is sent (label ``cmd``)."""

    count: str
    seconds: str


@dataclass(frozen=True)
class Backlog:
    """Messages waiting per queue: ``queue_label`` names the topic or queue, ``group_label`` (when the
    exporter has one) the consumer group; ``fixed`` labels have one value on every series."""

    series: str
    queue_label: str
    group_label: str | None = None
    fixed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Exporter:
    """The series a datastore kind's exporter publishes, each labelled ``service`` with the datastore's
    Service name, in the order: gauges, command counters, backlog."""

    gauges: tuple[Gauge, ...] = ()
    commands: Commands | None = None
    backlog: Backlog | None = None

    def series(self) -> tuple[str, ...]:
        names = [gauge.series for gauge in self.gauges]
        if self.commands is not None:
            names += [self.commands.count, self.commands.seconds]
        if self.backlog is not None:
            names.append(self.backlog.series)
        return tuple(names)


_REDIS = Exporter(
    gauges=(
        Gauge("redis_up", "up"),
        Gauge("redis_connected_clients", "clients"),
        Gauge("redis_memory_used_bytes", "memory"),
        Gauge("redis_memory_max_bytes", "memory_limit"),
    ),
    commands=Commands(count="redis_commands_total", seconds="redis_commands_duration_seconds_total"),
)

# Datastore kinds without an exporter here (MongoDB, Nacos) publish nothing.
EXPORTERS: dict[str, Exporter] = {
    "redis": _REDIS,
    "valkey": _REDIS,
    "mysql": Exporter(
        gauges=(
            Gauge("mysql_up", "up"),
            Gauge("mysql_global_status_threads_connected", "clients"),
            Gauge("mysql_global_variables_max_connections", "max_connections"),
            Gauge("mysql_global_status_slow_queries", "slow"),
        )
    ),
    "postgresql": Exporter(
        gauges=(
            Gauge("pg_up", "up"),
            Gauge("pg_stat_activity_count", "clients"),
            Gauge("pg_settings_max_connections", "max_connections"),
        )
    ),
    "kafka": Exporter(
        backlog=Backlog(
            "kafka_consumergroup_lag",
            queue_label="topic",
            group_label="consumergroup",
            fixed=(("partition", "0"),),
        )
    ),
    "rabbitmq": Exporter(
        gauges=(Gauge("rabbitmq_up", "up"),),
        backlog=Backlog("rabbitmq_queue_messages_ready", queue_label="queue"),
    ),
}


def series_names() -> frozenset[str]:
    """Every series name of the contract (no side effects)."""
    families = SPAN_METRICS + KUBE_STATE_METRICS + CADVISOR
    return frozenset(s.name for s in families) | {name for e in EXPORTERS.values() for name in e.series()}
