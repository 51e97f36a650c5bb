"""Span-metric accumulators and sampled traces: what the spanmetrics connector and Jaeger would hold."""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# The spanmetrics histogram buckets of the series contract (milliseconds).
BUCKETS_MS: tuple[float, ...] = (
    2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 2500, 5000, 10000, 15000,
)  # fmt: skip

SERVER = "SPAN_KIND_SERVER"
CLIENT = "SPAN_KIND_CLIENT"
OK = "STATUS_CODE_UNSET"
ERROR = "STATUS_CODE_ERROR"

SpanKey = tuple[str, str, str, str]  # service_name, span_name, span_kind, status_code


class SpanMetrics:
    """Cumulative counts, sums and per-bucket counts per span key (buckets are cumulated on export)."""

    def __init__(self) -> None:
        self.series: dict[SpanKey, list[float]] = {}

    def observe(self, key: SpanKey, ms: float, weight: float = 1.0) -> None:
        row = self.series.get(key)
        if row is None:
            row = self.series[key] = [0.0] * (len(BUCKETS_MS) + 3)
        row[0] += weight
        row[1] += ms * weight
        row[2 + bisect.bisect_left(BUCKETS_MS, ms)] += weight

    def export(self) -> list[tuple[SpanKey, float, float, list[float]]]:
        """(key, count, sum, cumulative bucket counts ending with +Inf) in key order."""
        out: list[tuple[SpanKey, float, float, list[float]]] = []
        for key in sorted(self.series):
            row = self.series[key]
            cumulative: list[float] = []
            running = 0.0
            for value in row[2:]:
                running += value
                cumulative.append(running)
            out.append((key, row[0], row[1], cumulative))
        return out


@dataclass
class Span:
    span_id: str
    parent_id: str | None
    service: str
    operation: str
    kind: str  # "server" | "client"
    start_us: int
    duration_us: int
    error: bool
    tags: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    trace_id: str
    start_us: int
    spans: list[Span]

    @property
    def services(self) -> frozenset[str]:
        return frozenset(s.service for s in self.spans)


class TraceBook:
    """A bounded sample of recent traces (the oldest are dropped first)."""

    def __init__(self, limit: int = 4000) -> None:
        self.traces: deque[Trace] = deque(maxlen=limit)

    def add(self, trace: Trace) -> None:
        self.traces.append(trace)

    def services(self) -> list[str]:
        return sorted({s for t in self.traces for s in t.services})

    def find(
        self,
        *,
        service: str | None,
        start_us: int | None,
        end_us: int | None,
        limit: int,
        operation: str | None = None,
    ) -> list[Trace]:
        """Newest first, as Jaeger's query service answers."""
        found: list[Trace] = []
        for trace in reversed(self.traces):
            if start_us is not None and trace.start_us < start_us:
                continue
            if end_us is not None and trace.start_us > end_us:
                continue
            if service and service not in trace.services:
                continue
            if operation and not any(s.operation == operation and s.service == service for s in trace.spans):
                continue
            found.append(trace)
            if len(found) >= limit:
                break
        return found
