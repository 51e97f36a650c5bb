"""Jaeger-compatible trace queries over the twin's sampled traces: ``/api/services`` and ``/api/traces``.

The answers have the shape of Jaeger's HTTP query API (``{"data": [...], "total", "limit", "offset",
"errors"}``) so Jaeger clients and the tool layer read them unchanged. Times are microseconds since the
Unix epoch of the simulated instants.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from orchestrator.twin.model.spans import Trace, TraceBook
from orchestrator.twin.timefmt import epoch_s


def _epoch_us() -> int:
    return round(epoch_s() * 1_000_000)


def jaeger_trace(trace: Trace) -> dict[str, Any]:
    """One trace as Jaeger's query service returns it (no side effects)."""
    processes: dict[str, str] = {}
    for span in trace.spans:
        processes.setdefault(span.service, f"p{len(processes) + 1}")
    spans = []
    for span in trace.spans:
        tags: list[dict[str, Any]] = [{"key": "span.kind", "type": "string", "value": span.kind}]
        if span.error:
            tags.append({"key": "error", "type": "bool", "value": True})
            tags.append({"key": "otel.status_code", "type": "string", "value": "ERROR"})
        tags.extend({"key": k, "type": "string", "value": str(v)} for k, v in sorted(span.tags.items()))
        references = []
        if span.parent_id:
            references.append({"refType": "CHILD_OF", "traceID": trace.trace_id, "spanID": span.parent_id})
        spans.append(
            {
                "traceID": trace.trace_id,
                "spanID": span.span_id,
                "operationName": span.operation,
                "references": references,
                "flags": 1,
                "startTime": _epoch_us() + span.start_us,
                "duration": span.duration_us,
                "tags": tags,
                "logs": [],
                "processID": processes[span.service],
                "warnings": None,
            }
        )
    return {
        "traceID": trace.trace_id,
        "spans": spans,
        "warnings": None,
        "processes": {pid: {"serviceName": name, "tags": []} for name, pid in processes.items()},
    }


def _envelope(data: list[Any], limit: int = 0) -> dict[str, Any]:
    return {"data": data, "total": len(data), "limit": limit, "offset": 0, "errors": None}


def router(book: TraceBook, *, lock: Any) -> APIRouter:
    """Routes answering from ``book``; ``lock`` is held while reading (the stepping thread writes)."""
    routes = APIRouter()

    @routes.get("/api/services")
    def services() -> dict[str, Any]:
        with lock:
            return _envelope(book.services())

    @routes.get("/api/services/{service}/operations")
    def operations(service: str) -> dict[str, Any]:
        with lock:
            names = sorted({s.operation for t in book.traces for s in t.spans if s.service == service})
        return _envelope(names)

    @routes.get("/api/traces")
    def traces(
        service: str | None = None,
        operation: str | None = None,
        start: int | None = Query(default=None, description="microseconds since the Unix epoch"),
        end: int | None = Query(default=None, description="microseconds since the Unix epoch"),
        limit: int = Query(default=20, ge=1, le=1500),
    ) -> dict[str, Any]:
        with lock:
            found = book.find(
                service=service,
                operation=operation,
                limit=limit,
                start_us=None if start is None else start - _epoch_us(),
                end_us=None if end is None else end - _epoch_us(),
            )
            data = [jaeger_trace(t) for t in found]
        return _envelope(data, limit)

    @routes.get("/api/traces/{trace_id}")
    def trace(trace_id: str) -> dict[str, Any]:
        with lock:
            data = [jaeger_trace(t) for t in book.traces if t.trace_id == trace_id]
        return _envelope(data)

    return routes
