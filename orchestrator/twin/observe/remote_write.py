"""Prometheus remote write (protocol 1.0) for the twin: scrapes encoded straight into the ``WriteRequest``
protobuf wire format, snappy-compressed and posted.

The bytes are those the protobuf runtime writes for the same ``WriteRequest`` (proto3: a label with an empty
value and a sample whose value bits or timestamp are zero leave that field out). Encoding by hand keeps a
series' labels encoded once for the run and builds no message object per sample, which is most of what a
marathon's telemetry costs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import chain, repeat

import cramjam
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.metrics import Key, Labels

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
    "User-Agent": "marathon-twin",
}
_ZERO = bytes(8)
Scrape = tuple[int, Sequence[Key], Sequence[float]]


def varint(value: int) -> bytes:
    """The protobuf varint of a non-negative ``value`` (no side effects)."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@lru_cache(maxsize=65536)
def _length(size: int) -> bytes:
    """The varint of a field length; a run writes few distinct ones."""
    return varint(size)


def _field(tag: int, body: bytes) -> bytes:
    return bytes((tag,)) + varint(len(body)) + body


def _text(tag: int, text: str) -> bytes:
    return _field(tag, text.encode()) if text else b""


def label_bytes(name: str, labels: Labels) -> bytes:
    """The encoded ``labels`` field of one TimeSeries: ``__name__`` first, then ``labels`` as given."""
    return b"".join(
        _field(0x0A, _text(0x0A, key) + _text(0x12, value)) for key, value in (("__name__", name), *labels)
    )


def _samples(ts: int, values: Sequence[float]) -> list[bytes]:
    """The encoded ``samples`` field of each value at timestamp ``ts`` (no side effects)."""
    stamp = b"\x10" + varint(ts)
    with_value = b"\x12" + bytes((9 + len(stamp),)) + b"\x09"
    zero = b"\x12" + bytes((len(stamp),)) + stamp
    packed = struct.pack(f"<{len(values)}d", *values)
    return [
        zero if raw == _ZERO else with_value + raw + stamp
        for raw in (packed[i : i + 8] for i in range(0, len(packed), 8))
    ]


def _runs(scrapes: Sequence[Scrape]) -> list[list[Scrape]]:
    """Consecutive scrapes grouped by the list of series they share (no side effects)."""
    runs: list[list[Scrape]] = []
    for scrape in scrapes:
        if runs and (runs[-1][0][1] is scrape[1] or runs[-1][0][1] == scrape[1]):
            runs[-1].append(scrape)
        else:
            runs.append([scrape])
    return runs


def _bodies(run: Sequence[Scrape]) -> list[bytes]:
    """The encoded samples of each series of scrapes that share one list of series (no side effects)."""
    columns = [_samples(ts, values) for ts, _, values in run]
    if len(columns) == 1:
        return columns[0]
    return [b"".join(row) for row in zip(*columns, strict=True)]


class Encoder:
    """Turns scrapes into ``WriteRequest`` bodies; remembers each series' encoded labels, and the labels of
    the last list of series it encoded, which a scrape shares with the scrapes before it until a series
    comes or goes."""

    def __init__(self) -> None:
        self._labels: dict[Key, bytes] = {}
        self._last: tuple[Sequence[Key], list[bytes] | None] = ((), [])

    def timeseries(self, scrapes: Sequence[Scrape]) -> list[bytes]:
        """One encoded TimeSeries (without its field header) per series, in order of first appearance, its
        samples in time order (no side effects beyond the label caches).

        Consecutive scrapes of one list of series are encoded a scrape at a time instead of a sample at a
        time; only where the list changes are series matched by key."""
        runs = _runs(scrapes)
        if len(runs) == 1:
            labels = self._labels_of(runs[0][0][1])
            if labels is not None:
                return [head + body for head, body in zip(labels, _bodies(runs[0]), strict=True)]
        merged: dict[Key, list[bytes]] = {}
        for run in runs:
            keys = run[0][1]
            if self._labels_of(keys) is not None:
                parts: Iterable[tuple[Key, bytes]] = zip(keys, _bodies(run), strict=True)
            else:  # a scrape that repeats a series: its samples go one by one
                parts = (
                    (key, piece)
                    for ts, ks, values in run
                    for key, piece in zip(ks, _samples(ts, values), strict=True)
                )
            for key, body in parts:
                found = merged.get(key)
                if found is None:
                    merged[key] = [body]
                else:
                    found.append(body)
        return [self._label_bytes(key) + b"".join(encoded) for key, encoded in merged.items()]

    def _labels_of(self, keys: Sequence[Key]) -> list[bytes] | None:
        """The encoded labels of each series of ``keys``, or None when a series is listed twice."""
        last, labels = self._last
        if keys is not last:
            labels = [self._label_bytes(key) for key in keys] if len(set(keys)) == len(keys) else None
            self._last = (keys, labels)
        return labels

    def _label_bytes(self, key: Key) -> bytes:
        found = self._labels.get(key)
        if found is None:
            found = self._labels[key] = label_bytes(*key)
        return found

    def requests(self, scrapes: Sequence[Scrape], *, max_series: int) -> Iterator[bytes]:
        """Uncompressed ``WriteRequest`` bodies of at most ``max_series`` series each."""
        series = self.timeseries(scrapes)
        for start in range(0, len(series), max_series):
            chunk = series[start : start + max_series]
            # Each series as a ``timeseries`` field (tag, length, body), joined without a loop in Python.
            yield b"".join(chain.from_iterable(zip(repeat(b"\x0a"), map(_length, map(len, chunk)), chunk)))


class RemoteWriteClient:
    """Posts encoded write requests to one Prometheus; failures become ``TelemetryError``."""

    def __init__(self, url: str, *, retries: int = 2, timeout_s: float = 30.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._session = requests.Session()
        retry = Retry(
            total=retries,
            backoff_factor=0.5,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=frozenset(["POST"]),
            raise_on_status=False,
        )
        self._session.mount("http://", HTTPAdapter(max_retries=retry))
        self._session.mount("https://", HTTPAdapter(max_retries=retry))

    def post(self, body: bytes) -> None:
        data = bytes(cramjam.snappy.compress_raw(body))
        try:
            response = self._session.post(self.url, data=data, headers=HEADERS, timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise TelemetryError(f"remote write to {self.url} failed: {exc}") from exc
        if response.status_code >= 400:
            raise TelemetryError(
                f"remote write to {self.url} answered {response.status_code}: {response.text[:1024]}"
            )

    def close(self) -> None:
        self._session.close()
