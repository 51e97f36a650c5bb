"""A seeded synthetic Online Boutique run in the series of the contract (alert_rules/SERIES.md), for
checking the rule pack's thresholds against healthy noise and for timing the evaluator; optional faults
make it unhealthy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from orchestrator.rng import derive

NAMESPACE = "online-boutique"
BUCKETS = (
    "2",
    "4",
    "6",
    "8",
    "10",
    "50",
    "100",
    "200",
    "400",
    "800",
    "1000",
    "1400",
    "2000",
    "2500",
    "5000",
    "10000",
    "15000",
    "+Inf",
)
# service -> (server span name, requests/s, median latency ms)
SERVICES = {
    "frontend": ("GET /", 3.0, 60.0),
    "productcatalogservice": ("hipstershop.ProductCatalogService/GetProduct", 6.0, 4.0),
    "currencyservice": ("hipstershop.CurrencyService/Convert", 8.0, 3.0),
    "cartservice": ("hipstershop.CartService/GetCart", 2.0, 6.0),
    "recommendationservice": ("hipstershop.RecommendationService/ListRecommendations", 1.5, 12.0),
    "adservice": ("hipstershop.AdService/GetAds", 1.5, 5.0),
    "checkoutservice": ("hipstershop.CheckoutService/PlaceOrder", 0.3, 90.0),
    "paymentservice": ("hipstershop.PaymentService/Charge", 0.3, 5.0),
    "shippingservice": ("hipstershop.ShippingService/GetQuote", 0.6, 4.0),
    "emailservice": ("hipstershop.EmailService/SendOrderConfirmation", 0.3, 8.0),
}
Key = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Fault:
    """From ``start`` to ``end`` seconds after the origin, ``service`` fails ``error_ratio`` of requests, and
    its container restarts every ``restart_every`` seconds (0: never)."""

    service: str
    start: float
    end: float
    error_ratio: float = 0.0
    restart_every: float = 0.0


@dataclass
class _Counters:
    values: dict[Key, float] = field(default_factory=dict)

    def add(self, key: Key, amount: float) -> float:
        self.values[key] = self.values.get(key, 0.0) + amount
        return self.values[key]


def _key(metric: str, **labels: str) -> Key:
    return tuple(sorted({"__name__": metric, "namespace": NAMESPACE, **labels}.items()))


def pod_name(service: str) -> str:
    suffix = derive(7, f"pod:{service}")
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return f"{service}-{''.join(suffix.choices(alphabet, k=10))}-{''.join(suffix.choices(alphabet, k=5))}"


def _poisson(rng: random.Random, mean: float) -> int:
    if mean > 30:  # normal approximation keeps large means cheap
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


def generate(
    *, origin: float, minutes: float, seed: int, faults: tuple[Fault, ...] = (), step: float = 5.0
) -> dict[Key, list[tuple[float, float]]]:
    """Every series of the run, sampled every ``step`` seconds from ``origin`` (no side effects)."""
    rng = derive(seed, "synthetic-run")
    counters = _Counters()
    out: dict[Key, list[tuple[float, float]]] = {}
    for k in range(int(minutes * 60 / step) + 1):
        t = origin + k * step
        for key, value in _sample(rng, counters, offset=t - origin, step=step, faults=faults):
            out.setdefault(key, []).append((t, value))
        for key, value in _infrastructure(rng, counters, step=step):
            out.setdefault(key, []).append((t, value))
    return out


def _infrastructure(rng: random.Random, counters: _Counters, *, step: float) -> Iterator[tuple[Key, float]]:
    redis = {"service": "redis-cart"}
    yield _key("redis_up", **redis), 1.0
    yield _key("redis_connected_clients", **redis), 2.0
    yield _key("redis_memory_used_bytes", **redis), 3e6 * rng.uniform(0.95, 1.05)
    yield _key("redis_memory_max_bytes", **redis), 0.0
    commands = _poisson(rng, step * 4)
    total = _key("redis_commands_total", **redis, cmd="hget")
    yield total, counters.add(total, commands)
    duration = _key("redis_commands_duration_seconds_total", **redis, cmd="hget")
    yield duration, counters.add(duration, commands * rng.uniform(2e-5, 6e-5))
    for node, zone in (("node-a1", "zone-a"), ("node-b1", "zone-b")):
        yield _key("kube_node_labels", node=node, label_topology_kubernetes_io_zone=zone), 1.0
        for condition, healthy in (("Ready", True), ("MemoryPressure", False), ("DiskPressure", False)):
            for status in ("true", "false"):
                yield (
                    _key("kube_node_status_condition", node=node, condition=condition, status=status),
                    float((status == "true") == healthy),
                )


def _sample(
    rng: random.Random, counters: _Counters, *, offset: float, step: float, faults: tuple[Fault, ...]
) -> Iterator[tuple[Key, float]]:
    active = {f.service: f for f in faults if f.start <= offset < f.end}
    for service, (span, rate, median) in SERVICES.items():
        fault = active.get(service)
        base = {"service_name": service, "span_name": span, "span_kind": "SPAN_KIND_SERVER"}
        calls = _poisson(rng, rate * step)
        failed = sum(rng.random() < fault.error_ratio for _ in range(calls)) if fault else 0
        for status, count in (("STATUS_CODE_UNSET", calls - failed), ("STATUS_CODE_ERROR", failed)):
            labels = {**base, "status_code": status}
            yield (
                _key("traces_span_metrics_calls_total", **labels),
                counters.add(_key("traces_span_metrics_calls_total", **labels), count),
            )
        latencies = [rng.lognormvariate(math.log(median), 0.5) for _ in range(calls)]
        labels = {**base, "status_code": "STATUS_CODE_UNSET"}
        for bound in BUCKETS:
            key = _key("traces_span_metrics_duration_milliseconds_bucket", **labels, le=bound)
            limit = math.inf if bound == "+Inf" else float(bound)
            yield key, counters.add(key, sum(1 for v in latencies if v <= limit))
        yield from (
            (
                _key("traces_span_metrics_duration_milliseconds_count", **labels),
                counters.add(_key("traces_span_metrics_duration_milliseconds_count", **labels), calls),
            ),
            (
                _key("traces_span_metrics_duration_milliseconds_sum", **labels),
                counters.add(_key("traces_span_metrics_duration_milliseconds_sum", **labels), sum(latencies)),
            ),
        )
        yield from _kubernetes(rng, counters, service=service, step=step, fault=fault, offset=offset)


def _kubernetes(
    rng: random.Random, counters: _Counters, *, service: str, step: float, fault: Fault | None, offset: float
) -> Iterator[tuple[Key, float]]:
    pod = pod_name(service)
    container = {"pod": pod, "container": "server"}
    crashing = fault is not None and fault.restart_every > 0
    restarted = (
        crashing
        and fault is not None
        and int((offset - fault.start) // fault.restart_every)
        != int((offset - step - fault.start) // fault.restart_every)
    )
    yield (
        _key(
            "kube_pod_info",
            pod=pod,
            node="node-a1" if len(service) % 2 else "node-b1",
            created_by_kind="ReplicaSet",
            created_by_name=pod.rsplit("-", 1)[0],
        ),
        1.0,
    )
    for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        yield _key("kube_pod_status_phase", pod=pod, phase=phase), float(phase == "Running")
    for condition, value in (("true", not crashing), ("false", crashing), ("unknown", False)):
        yield _key("kube_pod_status_ready", pod=pod, condition=condition), float(value)
    restarts = _key("kube_pod_container_status_restarts_total", **container)
    yield restarts, counters.add(restarts, 1.0 if restarted else 0.0)
    yield (
        _key("kube_pod_container_status_waiting_reason", **container, reason="CrashLoopBackOff"),
        float(crashing),
    )
    for metric, value in (
        ("spec_replicas", 1),
        ("status_replicas_available", 0 if crashing else 1),
        ("status_replicas_unavailable", 1 if crashing else 0),
        ("status_replicas_updated", 1),
        ("metadata_generation", 2),
        ("status_observed_generation", 2),
    ):
        yield _key(f"kube_deployment_{metric}", deployment=service), float(value)
    cpu = _key("container_cpu_usage_seconds_total", **container)
    yield cpu, counters.add(cpu, step * rng.uniform(0.02, 0.08))
    periods = _key("container_cpu_cfs_periods_total", **container)
    yield periods, counters.add(periods, step * 10)
    throttled = _key("container_cpu_cfs_throttled_periods_total", **container)
    yield throttled, counters.add(throttled, _poisson(rng, step * 0.3))
    yield _key("container_memory_working_set_bytes", **container), 48e6 * rng.uniform(0.9, 1.1)
    yield _key("container_spec_memory_limit_bytes", **container), 128 * 2**20
