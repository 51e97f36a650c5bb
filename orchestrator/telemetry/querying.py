"""The one query adapter to Prometheus, built on ``prometheus-api-client``.

Every PromQL query of the orchestrator goes through ``PrometheusQuerier``; evaluation times are always
arguments, and every library or HTTP failure becomes a ``TelemetryError`` naming the query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException
from prometheus_api_client.prometheus_connect import PrometheusConnect
from urllib3.util.retry import Retry

from orchestrator.errors import QueryRejected, TelemetryError
from orchestrator.telemetry.alerts import Sample

MAX_POINTS_PER_QUERY = 10_000  # Prometheus refuses range queries over 11,000 points per series


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range query: its labels and its (time, value) points in time order."""

    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


class Querier(Protocol):
    """What the evaluator and the probes need from Prometheus."""

    def instant(self, query: str, *, at: float) -> list[Sample]: ...

    def range(self, query: str, *, start: float, end: float, step: float) -> list[RangeSeries]: ...


class PrometheusQuerier:
    """Instant, range and label-value queries against one Prometheus server."""

    def __init__(self, url: str, *, timeout: int = 30) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout
        # Few, quick retries: a dead server must surface as a TelemetryError within seconds, not minutes.
        retry = Retry(total=2, backoff_factor=0.2, status_forcelist=(502, 503, 504))
        self._client = PrometheusConnect(url=self.url, disable_ssl=True, timeout=timeout, retry=retry)

    def close(self) -> None:
        self._client.close()

    def instant(self, query: str, *, at: float) -> list[Sample]:
        """The value of ``query`` at time ``at`` (seconds since the epoch), as an instant vector."""
        result = self._call(
            query, lambda: self._client.custom_query(query, params={"time": _ts(at)}, timeout=self._timeout)
        )
        if _is_scalar(result):
            return [Sample(labels={}, value=_number(result[1], query))]
        return [
            Sample(labels=dict(item["metric"]), value=_number(item["value"][1], query)) for item in result
        ]

    def range(self, query: str, *, start: float, end: float, step: float) -> list[RangeSeries]:
        """``query`` evaluated at ``start``, ``start + step``, ... up to ``end``; long spans are split so no
        request exceeds Prometheus' point limit."""
        if step <= 0 or end < start:
            raise TelemetryError(f"range query {query!r}: invalid span start={start} end={end} step={step}")
        merged: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        chunk = step * (MAX_POINTS_PER_QUERY - 1)
        lo = start
        while lo <= end:
            hi = min(end, lo + chunk)
            for item in self._range_chunk(query, start=lo, end=hi, step=step):
                key = tuple(sorted(item["metric"].items()))
                points = [(float(t), _number(v, query)) for t, v in item["values"]]
                merged.setdefault(key, []).extend(points)
            lo = hi + step
        return [RangeSeries(labels=dict(key), points=tuple(points)) for key, points in sorted(merged.items())]

    def label_values(
        self, label: str, *, match: Sequence[str] = (), start: float | None = None, end: float | None = None
    ) -> list[str]:
        """Every value ``label`` takes, optionally among series matching ``match`` within [start, end]."""
        params: dict[str, Any] = {}
        if match:
            params["match[]"] = list(match)
        if start is not None:
            params["start"] = _ts(start)
        if end is not None:
            params["end"] = _ts(end)
        values = self._call(
            f"label_values({label})", lambda: self._client.get_label_values(label, params=params)
        )
        return sorted(str(v) for v in values)

    def _range_chunk(self, query: str, *, start: float, end: float, step: float) -> list[dict[str, Any]]:
        # The library rounds datetimes to whole seconds; the params it forwards take precedence, so the
        # exact times are passed there.
        params = {"start": _ts(start), "end": _ts(end), "step": _ts(step)}
        result: list[dict[str, Any]] = self._call(
            query,
            lambda: self._client.custom_query_range(
                query,
                start_time=datetime.fromtimestamp(start, UTC),
                end_time=datetime.fromtimestamp(end, UTC),
                step=_ts(step),
                params=params,
                timeout=self._timeout,
            ),
        )
        return result

    def _call(self, what: str, thunk: Callable[[], Any]) -> Any:
        try:
            return thunk()
        except PrometheusApiClientException as exc:
            message = f"Prometheus at {self.url} rejected {what!r}: {exc}"
            raise QueryRejected(message, answer=str(exc)) from exc
        except requests.RequestException as exc:
            raise TelemetryError(f"Prometheus at {self.url} unreachable for {what!r}: {exc}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise TelemetryError(f"Prometheus at {self.url} answered {what!r} unexpectedly: {exc}") from exc


def _ts(seconds: float) -> str:
    return f"{seconds:.3f}"


def _is_scalar(result: Any) -> bool:
    return isinstance(result, list) and len(result) == 2 and not isinstance(result[0], dict)


def _number(text: Any, query: str) -> float:
    try:
        return float(text)  # Prometheus writes NaN, +Inf and -Inf as float() reads them
    except (TypeError, ValueError) as exc:
        raise TelemetryError(f"query {query!r}: value {text!r} is not a number") from exc
