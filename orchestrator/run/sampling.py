"""What users feel and whether faults are repaired, sampled between boundaries with few queries.

Service measurements and symptom probes are read as range queries over a fixed grid of schedule times (the
multiples of the sample step), one request per query per boundary instead of one per sample. Artifacts are
read from the cluster: does the responsible field hold its pre-injection value again?
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from orchestrator.bundle.records import ArtifactSample, ProbeSample, ServiceSample
from orchestrator.catalog.faults import SymptomProbe as CatalogProbe
from orchestrator.cluster.client import KubeClient, NotFound
from orchestrator.cluster.mechanisms import Handle, artifact_restored
from orchestrator.errors import ClusterError
from orchestrator.telemetry.probes import HealthyWhen, SymptomProbe, judge, service_queries
from orchestrator.telemetry.querying import Querier, Series


def grid(after: float, until: float, step: float) -> list[float]:
    """Multiples of ``step`` in (after, until], in whole milliseconds so that rounding adds none
    (no side effects)."""
    step_ms = round(step * 1000)
    first = math.floor(round(after * 1000) / step_ms) + 1
    last = math.floor(round(until * 1000) / step_ms)
    return [k * step_ms / 1000 for k in range(first, last + 1)]


def by_time(series: Sequence[Series], *, origin: float) -> dict[float, list[float]]:
    """Values of a range result grouped by schedule time (ms-rounded), series in label order."""
    values: dict[float, list[float]] = {}
    for one in sorted(series, key=lambda s: sorted(s.labels.items())):
        for epoch, value in one.points:
            values.setdefault(round(epoch - origin, 3), []).append(value)
    return values


def probe_of(probe: CatalogProbe, namespace: str) -> SymptomProbe:
    """The catalog's probe with ``$namespace`` substituted, as the telemetry probe model (no side effects)."""
    return SymptomProbe(
        query=probe.query.replace("$namespace", namespace),
        healthy=HealthyWhen(op=probe.healthy.op, value=probe.healthy.value),
    )


@dataclass
class Sampler:
    """Reads q/e/l at the entry point and the symptom probes of live faults over a grid of schedule times.

    Side effects: Prometheus range queries only.
    """

    querier: Querier
    namespace: str
    entry_point: str
    origin_epoch_s: float
    step_s: float
    window: str = "2m"

    def service(self, *, after: float, until: float) -> list[ServiceSample]:
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
            e = _fraction(value["failed"], q)
            slow = _fraction(value["total"] - value["fast"], value["total"])
            samples.append(ServiceSample(t=t, q=q, e=e, l=slow))
        return samples

    def probe(self, fault_id: str, probe: SymptomProbe, *, after: float, until: float) -> list[ProbeSample]:
        times = grid(after, until, self.step_s)
        if not times:
            return []
        found = by_time(self._range(probe.query, times), origin=self.origin_epoch_s)
        samples = []
        for t in times:
            result = judge(probe, found.get(round(t, 3), []), at=t)
            value = result.value if result.value is None or math.isfinite(result.value) else None
            samples.append(ProbeSample(fault_id=fault_id, t=t, value=value, healthy=result.healthy))
        return samples

    def _range(self, query: str, times: list[float]) -> list[Series]:
        start, end = self.origin_epoch_s + times[0], self.origin_epoch_s + times[-1]
        return self.querier.range(query, start=start, end=end, step=self.step_s)


def _first(values: list[float] | None) -> float:
    if not values or not math.isfinite(values[0]):
        return 0.0
    return max(0.0, values[0])


def _fraction(part: float, whole: float) -> float:
    if whole <= 0:
        return 0.0
    return min(1.0, max(0.0, part / whole))


def artifact_sample(client: KubeClient, handle: Handle, *, t: float) -> ArtifactSample | None:
    try:
        restored = artifact_restored(client, handle)
    except NotFound:
        restored = False  # the object itself is gone: its setting is certainly not as it was
    except ClusterError:
        return None  # no observation rather than a wrong one
    if restored is None:
        return None
    return ArtifactSample(fault_id=handle.fault_id, t=t, restored=restored)
