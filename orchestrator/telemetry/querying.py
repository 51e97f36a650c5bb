"""The one query adapter to Prometheus: its HTTP API (``query``, ``query_range``, ``label/.../values``) over
one pool of keep-alive connections.

Every PromQL query of the orchestrator goes through ``PrometheusQuerier``; evaluation times are always
arguments, and every HTTP failure becomes a ``TelemetryError`` naming the query. A marathon makes thousands of
small queries, so the adapter speaks to urllib3 directly: a ``requests`` session (and the client library on
it) cost three times as much CPU per query for the same request and answer.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import urllib3
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
        self._timeout = urllib3.Timeout(connect=timeout, read=timeout)
        # Few, quick retries: a dead server must surface as a TelemetryError within seconds, not minutes.
        retry = Retry(total=2, backoff_factor=0.2, status_forcelist=(502, 503, 504))
        # Queries run from several threads at once (rules, probes, samples): keep a connection for each.
        # TLS is not verified, as the query library was told before (a cluster's Prometheus behind a
        # self-signed certificate); an HTTP(S)_PROXY from the environment applies unless NO_PROXY excludes it.
        options: dict[str, Any] = {"retries": retry, "maxsize": 16, "cert_reqs": "CERT_NONE"}
        proxy = _proxy_for(self.url)
        self._pool: urllib3.PoolManager = (
            urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)
        )

    def close(self) -> None:
        self._pool.clear()

    def instant(self, query: str, *, at: float) -> list[Sample]:
        """The value of ``query`` at time ``at`` (seconds since the epoch), as an instant vector."""
        params = {"query": query, "time": _ts(at)}
        result = self._call(query, lambda: self._get("/api/v1/query", query, params)["result"])
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
        what = f"label_values({label})"
        values = self._call(what, lambda: self._get(f"/api/v1/label/{label}/values", what, params))
        return sorted(str(v) for v in values)

    def _range_chunk(self, query: str, *, start: float, end: float, step: float) -> list[dict[str, Any]]:
        params = {"query": query, "start": _ts(start), "end": _ts(end), "step": _ts(step)}
        result: list[dict[str, Any]] = self._call(
            query, lambda: self._get("/api/v1/query_range", query, params)["result"]
        )
        return result

    def _get(self, path: str, what: str, params: dict[str, Any]) -> Any:
        """The ``data`` of Prometheus' answer to GET ``path``; ``QueryRejected`` with what it said when it
        answers with an error status."""
        try:
            response = self._pool.request(
                "GET", f"{self.url}{path}?{urlencode(params, doseq=True)}", timeout=self._timeout
            )
        except urllib3.exceptions.HTTPError as exc:  # refused, reset, timed out, retries exhausted
            raise TelemetryError(f"Prometheus at {self.url} unreachable for {what!r}: {exc}") from exc
        if response.status != 200:
            answer = f"HTTP Status Code {response.status} ({response.data!r})"
            raise QueryRejected(f"Prometheus at {self.url} rejected {what!r}: {answer}", answer=answer)
        return json.loads(response.data)["data"]

    def _call(self, what: str, thunk: Callable[[], Any]) -> Any:
        try:
            return thunk()
        except (ValueError, KeyError, TypeError) as exc:
            raise TelemetryError(f"Prometheus at {self.url} answered {what!r} unexpectedly: {exc}") from exc


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url``, unless its host is to be reached directly."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _ts(seconds: float) -> str:
    return f"{seconds:.3f}"


def _is_scalar(result: Any) -> bool:
    return isinstance(result, list) and len(result) == 2 and not isinstance(result[0], dict)


def _number(text: Any, query: str) -> float:
    try:
        return float(text)  # Prometheus writes NaN, +Inf and -Inf as float() reads them
    except (TypeError, ValueError) as exc:
        raise TelemetryError(f"query {query!r}: value {text!r} is not a number") from exc
