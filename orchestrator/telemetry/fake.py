"""A scripted stand-in for Prometheus behind the ``Querier`` seam, for tests of what sits on top of it.

Answers are looked up by query fragment, first match in insertion order; every request is recorded, so a test
can check which queries were made and at which (epoch) times. A fragment may answer with a number (one series
with no labels), ``None`` (no data) or ready-made samples and series; a range answer may also be a function of
the evaluation time, giving ``None`` where the series has no point. An instant query that matches nothing
raises ``LookupError`` when ``refuse_unscripted`` is set: that is how a test proves a query was never made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from orchestrator.telemetry.alerts import Sample
from orchestrator.telemetry.querying import RangeSeries

InstantAnswer = float | None | Sequence[Sample]
RangeAnswer = float | None | Callable[[float], float | None] | Sequence[RangeSeries]


@dataclass
class FakeQuerier:
    """Satisfies ``orchestrator.telemetry.querying.Querier`` from tables of scripted answers."""

    instants: Mapping[str, InstantAnswer] = field(default_factory=dict)
    ranges: Mapping[str, RangeAnswer] = field(default_factory=dict)
    refuse_unscripted: bool = False
    instant_calls: list[tuple[str, float]] = field(default_factory=list)
    range_calls: list[tuple[str, float, float, float]] = field(default_factory=list)

    def instant(self, query: str, *, at: float) -> list[Sample]:
        self.instant_calls.append((query, at))
        for fragment, answer in self.instants.items():
            if fragment in query:
                if answer is None:
                    return []
                if isinstance(answer, int | float):
                    return [Sample(labels={}, value=float(answer))]
                return list(answer)
        if self.refuse_unscripted:
            raise LookupError(f"no scripted instant answer for {query!r}")
        return []

    def range(self, query: str, *, start: float, end: float, step: float) -> list[RangeSeries]:
        self.range_calls.append((query, start, end, step))
        for fragment, answer in self.ranges.items():
            if fragment in query:
                if answer is None:
                    return []
                if isinstance(answer, int | float) or callable(answer):
                    return [RangeSeries(labels={}, points=_points(answer, start, end, step))]
                return list(answer)
        return []


def _points(
    answer: float | Callable[[float], float | None], start: float, end: float, step: float
) -> tuple[tuple[float, float], ...]:
    points: list[tuple[float, float]] = []
    count = int((end - start) / step + 1e-9) + 1
    for i in range(count):
        t = start + i * step
        value = answer(t) if callable(answer) else answer
        if value is not None:
            points.append((t, float(value)))
    return tuple(points)
