"""Feature flags read from the flag service's ConfigMap, and what each known flag does when it is on.

The flag file is flagd's format (``{"flags": {NAME: {"variants": ..., "defaultVariant": ...}}}``); a flag's
value is its default variant's value. The behaviours are those of the OpenTelemetry demo's services (the
flag names are theirs); a flag the table does not know changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from orchestrator.catalog.topology import Topology

FlagValue = bool | int | float | str


@dataclass(frozen=True)
class OpFault:
    """Requests to ``service`` (for ``op``, or every op when None) fail or slow down while a flag is on."""

    error_ratio: float = 0.0
    extra_ms: float = 0.0
    message: str = ""  # what the service logs when the flag bites
    code: str = "Internal"


@dataclass
class FlagEffects:
    faults: dict[tuple[str, str | None], OpFault] = field(default_factory=dict)
    cpu_cores: dict[str, float] = field(default_factory=dict)  # service -> cores burnt
    leak_mib_per_min: dict[str, float] = field(default_factory=dict)
    notices: dict[str, str] = field(default_factory=dict)  # service -> line it logs now and then
    wrong_host: dict[tuple[str, str], str] = field(default_factory=dict)  # (caller, callee) -> host dialled
    route_factor: dict[str, float] = field(default_factory=dict)  # entry route -> extra request factor
    queue_factor: dict[str, float] = field(default_factory=dict)  # queue -> messages per produced one

    def fault(self, service: str, op: str) -> OpFault | None:
        return self.faults.get((service, op)) or self.faults.get((service, None))


def _number(value: FlagValue) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return 0.0 if value in ("", "off", "false") else 1.0


def _on(name: str, value: FlagValue, into: FlagEffects) -> None:
    level = _number(value)
    if level <= 0:
        return
    rule = _RULES.get(name)
    if rule is not None:
        rule(level, into)


def _set(**kwargs: object) -> Callable[[float, FlagEffects], None]:
    def apply(level: float, into: FlagEffects) -> None:
        del level
        for attr, entries in kwargs.items():
            getattr(into, attr).update(entries)

    return apply


def _payment_failure(level: float, into: FlagEffects) -> None:
    into.faults[("payment", "oteldemo.PaymentService/Charge")] = OpFault(
        error_ratio=min(1.0, level), message="Payment request failed. Invalid token. app.loyalty.level=gold"
    )


def _email_leak(level: float, into: FlagEffects) -> None:
    into.leak_mib_per_min["email"] = 0.05 * level


def _kafka_problems(level: float, into: FlagEffects) -> None:
    into.queue_factor["kafka"] = level
    into.notices["checkout"] = "FeatureFlag 'kafkaQueueProblems' is activated, overloading queue now."
    into.faults[("fraud-detection", None)] = OpFault(extra_ms=1000.0)


def _flood(level: float, into: FlagEffects) -> None:
    into.route_factor["GET /"] = level


def _image_slow(level: float, into: FlagEffects) -> None:
    into.faults[("frontend-proxy", "GET /images/products/{file}")] = OpFault(extra_ms=level)


_RULES: dict[str, Callable[[float, FlagEffects], None]] = {
    "adFailure": _set(faults={("ad", "oteldemo.AdService/GetAds"): OpFault(
        error_ratio=0.1, code="Unavailable",
        message="GetAds Failed with status Status{code=UNAVAILABLE, description=null, cause=null}")}),
    "adHighCpu": _set(cpu_cores={"ad": 4.0}, notices={"ad": "High CPU-Load problempattern enabled"}),
    "adManualGc": _set(faults={("ad", "oteldemo.AdService/GetAds"): OpFault(extra_ms=400.0)},
                       notices={"ad": "The runtime reports the available memory; triggering a manual garbage "
                                      "collection"}),
    "cartFailure": _set(faults={("cart", "oteldemo.CartService/EmptyCart"): OpFault(
        error_ratio=1.0, code="FailedPrecondition",
        message="StackExchange.Redis.RedisConnectionException: It was not possible to connect to the redis "
                "server(s). UnableToConnect on badhost:1234/Interactive")}),
    "paymentFailure": _payment_failure,
    "paymentUnreachable": _set(wrong_host={("checkout", "payment"): "badAddress"}),
    "productCatalogFailure": _set(faults={
        ("product-catalog", "oteldemo.ProductCatalogService/GetProduct"): OpFault(
            error_ratio=0.1, message="Product Catalog Fail Feature Flag Enabled")}),
    "recommendationCacheFailure": _set(faults={
        ("recommendation", "oteldemo.RecommendationService/ListRecommendations"): OpFault(
            error_ratio=0.5, message="recommendation cache refresh failed: GetProduct returned no product")}),
    "kafkaQueueProblems": _kafka_problems,
    "loadGeneratorFloodHomepage": _flood,
    "imageSlowLoad": _image_slow,
    "emailMemoryLeak": _email_leak,
    "llmRateLimitError": _set(faults={("llm", "POST /v1/chat/completions"): OpFault(
        error_ratio=0.5, code="ResourceExhausted",
        message="openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for "
                "requests', 'type': 'requests', 'code': 'rate_limit_exceeded'}}")}),
}  # fmt: skip


def flag_values(topology: Topology, configmaps: Mapping[str, Mapping[str, str]]) -> dict[str, FlagValue]:
    """Each flag's current value from the flag ConfigMap (no side effects); unreadable files give none."""
    if topology.feature_flag_service is None:
        return {}
    data = configmaps.get(f"{topology.feature_flag_service}-config") or {}
    values: dict[str, FlagValue] = {}
    for text in data.values():
        try:
            document = json.loads(text)
        except ValueError:
            continue
        for name, flag in sorted((document.get("flags") or {}).items()):
            if not isinstance(flag, dict) or flag.get("state", "ENABLED") != "ENABLED":
                continue
            variant = flag.get("defaultVariant")
            variants = flag.get("variants") or {}
            if variant in variants:
                values[name] = variants[variant]
    return values


def flag_effects(topology: Topology, configmaps: Mapping[str, Mapping[str, str]]) -> FlagEffects:
    """What the flags that are on do (no side effects)."""
    found = FlagEffects()
    for name, value in flag_values(topology, configmaps).items():
        _on(name, value, found)
    return found
