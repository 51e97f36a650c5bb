"""What Prometheus says about one application over spans of schedule time: the rule pack's alerts, the entry
point's requests, errors and slow requests, and symptom probes. The runner journals them at each boundary;
admission compares them before and after an injection.

Schedule time ``t`` is Unix time ``origin_epoch_s + t`` in Prometheus. Service and probe samples are read as
range queries over a fixed grid of schedule times (the multiples of the sample step), one request per query
per span instead of one per sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from orchestrator.telemetry.alerts import EvaluatedAlert
from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.probes import (
    ProbeQuery,
    ProbeResult,
    ServiceReading,
    fraction,
    judge,
    service_queries,
)
from orchestrator.telemetry.querying import Querier, RangeSeries
from orchestrator.telemetry.rules import RulePack


def grid(after: float, until: float, step: float) -> list[float]:
    """Multiples of ``step`` in (after, until], in whole milliseconds so that rounding adds none
    (no side effects)."""
    step_ms = round(step * 1000)
    first = math.floor(round(after * 1000) / step_ms) + 1
    last = math.floor(round(until * 1000) / step_ms)
    return [k * step_ms / 1000 for k in range(first, last + 1)]


def by_time(series: Sequence[RangeSeries], *, origin: float) -> dict[float, list[float]]:
    """Values of a range result grouped by schedule time (ms-rounded), series in label order."""
    values: dict[float, list[float]] = {}
    for one in sorted(series, key=lambda s: sorted(s.labels.items())):
        for epoch, value in one.points:
            values.setdefault(round(epoch - origin, 3), []).append(value)
    return values


@dataclass
class Observer:
    """Reads one application's series through one querier, and keeps how far the rule pack is evaluated.

    Alerts are evaluated from schedule time ``start_s``; samples lie on the grid of ``step_s``. Side effects:
    Prometheus queries only.
    """

    querier: Querier
    rules: RulePack
    namespace: str
    entry_point: str
    origin_epoch_s: float
    step_s: float = 15.0
    start_s: float = 0.0
    window: str = "2m"  # the rate window of the service samples
    evaluator: AlertEvaluator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.evaluator = AlertEvaluator(self.rules, self.querier, start=self.origin_epoch_s + self.start_s)

    def alerts(self, *, until: float) -> list[EvaluatedAlert]:
        """Evaluate the rule pack up to schedule time ``until``; the alert states this adds (Unix times)."""
        return self.evaluator.evaluate(until=self.origin_epoch_s + until)

    def service(self, *, after: float, until: float) -> list[ServiceReading]:
        """q, e and l of the entry point at each grid time in (after, until], from four range queries."""
        times = grid(after, until, self.step_s)
        if not times:
            return []
        queries = service_queries(namespace=self.namespace, service=self.entry_point, window=self.window)
        with ThreadPoolExecutor(max_workers=len(queries)) as pool:
            answers = list(pool.map(lambda query: self._range(query, times), queries.values()))
        results = {
            name: by_time(answer, origin=self.origin_epoch_s)
            for name, answer in zip(queries, answers, strict=True)
        }
        samples = []
        for t in times:
            value = {name: _first(found.get(round(t, 3))) for name, found in results.items()}
            q = value["q"]
            samples.append(
                ServiceReading(
                    at=t,
                    namespace=self.namespace,
                    service=self.entry_point,
                    q=q,
                    e=fraction(value["failed"], q),
                    l=fraction(value["total"] - value["fast"], value["total"]),
                )
            )
        return samples

    def probe(self, probe: ProbeQuery, *, after: float, until: float) -> list[ProbeResult]:
        """The probe's verdict at each grid time in (after, until], from one range query; a value that is not
        finite is reported as no value."""
        times = grid(after, until, self.step_s)
        if not times:
            return []
        found = by_time(self._range(probe.query, times), origin=self.origin_epoch_s)
        results = []
        for t in times:
            result = judge(probe, found.get(round(t, 3), []), at=t)
            value = result.value if result.value is None or math.isfinite(result.value) else None
            results.append(ProbeResult(at=t, value=value, healthy=result.healthy))
        return results

    def entry_rates(self, *, at: float, seconds: float) -> tuple[float, float]:
        """(requests/s, failed/s) of the entry point's server spans over the ``seconds`` before ``at``, from
        two instant queries."""
        queries = service_queries(
            namespace=self.namespace, service=self.entry_point, window=f"{round(seconds)}s"
        )
        return self._scalar(queries["q"], at=at), self._scalar(queries["failed"], at=at)

    def _range(self, query: str, times: list[float]) -> list[RangeSeries]:
        start, end = self.origin_epoch_s + times[0], self.origin_epoch_s + times[-1]
        return self.querier.range(query, start=start, end=end, step=self.step_s)

    def _scalar(self, query: str, *, at: float) -> float:
        samples = self.querier.instant(query, at=self.origin_epoch_s + at)
        if not samples or not math.isfinite(samples[0].value):
            return 0.0
        return samples[0].value


def _first(values: list[float] | None) -> float:
    if not values or not math.isfinite(values[0]):
        return 0.0
    return max(0.0, values[0])
