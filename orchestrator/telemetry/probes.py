"""Symptom probes and entry-point service measurements, read from Prometheus at a given time.

A probe is a PromQL query and a healthy condition; the service measurements are the q, e, l of
docs/metrics.md (request rate, failed fraction, fraction slower than 2.5 s) over the SERVER spans of the entry
service.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.telemetry.querying import Querier

Op = Literal["<", "<=", ">", ">=", "=="]
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
SLOW_MS = "2500"  # the duration bucket bound (ms) that defines a slow request


class HealthyWhen(BaseModel):
    """The condition every value of a probe's result must meet to count as healthy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Op
    value: float


class ProbeQuery(BaseModel):
    """A PromQL query and its healthy condition; ``no_data`` says what an empty result means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str
    healthy: HealthyWhen
    no_data: Literal["healthy", "unhealthy"] = "healthy"


@dataclass(frozen=True)
class ProbeResult:
    """One probe observation: the value that decided it (None without data) and the verdict."""

    at: float
    value: float | None
    healthy: bool


def judge(probe: ProbeQuery, values: list[float], *, at: float) -> ProbeResult:
    """The verdict for the values a probe's query returned (no side effects).

    NaN values (e.g. 0/0 when a service gets no traffic) count as no data. With several series the probe is
    healthy only if every one is; the value reported is the first failing one, else the first.
    """
    present = [v for v in values if not math.isnan(v)]
    if not present:
        return ProbeResult(at=at, value=None, healthy=probe.no_data == "healthy")
    check = _OPS[probe.healthy.op]
    failing = [v for v in present if not check(v, probe.healthy.value)]
    return ProbeResult(at=at, value=(failing or present)[0], healthy=not failing)


def evaluate_probe(querier: Querier, probe: ProbeQuery, *, at: float) -> ProbeResult:
    """Run ``probe`` at time ``at`` and judge it. Side effects: one Prometheus query."""
    samples = querier.instant(probe.query, at=at)
    ordered = sorted(samples, key=lambda s: sorted(s.labels.items()))
    return judge(probe, [s.value for s in ordered], at=at)


@dataclass(frozen=True)
class ServiceReading:
    """q (requests/s), e (failed fraction) and l (fraction slower than 2.5 s) of one service at ``at``."""

    at: float
    namespace: str
    service: str
    q: float
    e: float
    l: float  # noqa: E741 - the name docs/metrics.md gives it


def service_queries(*, namespace: str, service: str, window: str) -> dict[str, str]:
    """The PromQL of q, failed requests/s and requests/s under 2.5 s for a service (no side effects)."""
    selector = f'namespace="{namespace}", service_name="{service}", span_kind="SPAN_KIND_SERVER"'
    calls = "traces_span_metrics_calls_total"
    duration = "traces_span_metrics_duration_milliseconds"
    return {
        "q": f"sum(rate({calls}{{{selector}}}[{window}]))",
        "failed": f'sum(rate({calls}{{{selector}, status_code="STATUS_CODE_ERROR"}}[{window}]))',
        "total": f"sum(rate({duration}_count{{{selector}}}[{window}]))",
        "fast": f'sum(rate({duration}_bucket{{{selector}, le="{SLOW_MS}"}}[{window}]))',
    }


def measure_service(
    querier: Querier, *, namespace: str, service: str, at: float, window: str = "2m"
) -> ServiceReading:
    """q, e and l of ``service`` over ``window`` ending at ``at``; no traffic gives q = e = l = 0.
    Side effects: four Prometheus queries."""
    values: dict[str, float] = {}
    for name, query in service_queries(namespace=namespace, service=service, window=window).items():
        samples = querier.instant(query, at=at)
        values[name] = samples[0].value if samples and math.isfinite(samples[0].value) else 0.0
    q = values["q"]
    e = fraction(values["failed"], q)
    slow = fraction(values["total"] - values["fast"], values["total"])
    return ServiceReading(at=at, namespace=namespace, service=service, q=q, e=e, l=slow)


def fraction(part: float, whole: float) -> float:
    """``part / whole`` clipped to [0, 1]; 0 when ``whole`` is not positive (no side effects)."""
    if whole <= 0:
        return 0.0
    return min(1.0, max(0.0, part / whole))
