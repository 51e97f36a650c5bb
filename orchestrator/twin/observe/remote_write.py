"""Prometheus remote write (protocol 1.0) for the twin: scrapes encoded straight into the ``WriteRequest``
protobuf wire format, snappy-compressed and posted.

The bytes are those the protobuf runtime writes for the same ``WriteRequest`` (proto3: a label with an empty
value and a sample whose value bits or timestamp are zero leave that field out). Encoding by hand keeps a
series' labels encoded once for the run and builds no message object per sample, which is most of what a
marathon's telemetry costs.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, compress, repeat, starmap

import cramjam
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.alignment import common_run
from orchestrator.twin.observe.metrics import Key, Labels

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
    "User-Agent": "marathon-twin",
}
_ZERO = bytes(8)
# Key objects whose encoded labels are found by identity; past it the table starts afresh (keys of objects
# long changed or gone are held no longer).
MAX_KEY_OBJECTS = 1 << 17
Scrape = tuple[int, Sequence[Key], Sequence[float]]


@dataclass(frozen=True)
class Push:
    """The write requests of one push. ``ordered`` hold the series that were not in the encoder's previous
    push, which may be new to Prometheus: they are posted one after another, before the rest, so that
    Prometheus creates (and numbers) new series in the order they first appear, however the rest race.
    ``rest`` hold series of the previous push, which Prometheus has: appending to them commutes, so they
    may be posted in any order, side by side."""

    ordered: list[bytes]
    rest: list[bytes]

    @property
    def bodies(self) -> list[bytes]:
        """Every request, in the order a single poster sends them."""
        return [*self.ordered, *self.rest]


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


@lru_cache(maxsize=65536)
def _label(key: str, value: str) -> bytes:
    """One encoded ``Label`` field; a run repeats few distinct pairs over many series."""
    return _field(0x0A, _text(0x0A, key) + _text(0x12, value))


def label_bytes(name: str, labels: Labels) -> bytes:
    """The encoded ``labels`` field of one TimeSeries: ``__name__`` first, then ``labels`` as given."""
    return _label("__name__", name) + b"".join(starmap(_label, labels))


@lru_cache(maxsize=64)
def _split(count: int, size: int) -> Callable[[bytes], tuple[bytes, ...]]:
    """Cuts a buffer into ``count`` pieces of ``size`` bytes, in C."""
    return struct.Struct(f"{size}s" * count).unpack


def _samples(ts: int, values: Sequence[float]) -> list[bytes]:
    """The encoded ``samples`` field of each value at timestamp ``ts`` (no side effects).

    Every sample but a zero one is the same prefix, the value's 8 bytes and the same timestamp: they are
    written as one buffer by a join and cut apart, and only the zero values are replaced one by one."""
    stamp = b"\x10" + varint(ts)
    with_value = b"\x12" + bytes((9 + len(stamp),)) + b"\x09"
    zero = b"\x12" + bytes((len(stamp),)) + stamp
    count = len(values)
    if not count:
        return []
    raws = _split(count, 8)(struct.pack(f"<{count}d", *values))
    joined = with_value + (stamp + with_value).join(raws) + stamp
    encoded = list(_split(count, len(with_value) + 8 + len(stamp))(joined))
    for i in compress(range(count), map((0.0).__eq__, values)):  # +0.0 and -0.0; only +0.0 is all zero
        if raws[i] == _ZERO:
            encoded[i] = zero
    return encoded


def _runs(scrapes: Sequence[Scrape]) -> list[list[Scrape]]:
    """Consecutive scrapes grouped by the list of series they share (no side effects)."""
    runs: list[list[Scrape]] = []
    for scrape in scrapes:
        if runs and (runs[-1][0][1] is scrape[1] or runs[-1][0][1] == scrape[1]):
            runs[-1].append(scrape)
        else:
            runs.append([scrape])
    return runs


def _aligned(runs: Sequence[Sequence[Scrape]]) -> tuple[list[Key], list[bytes]]:
    """The series of runs of scrapes, each run listing distinct series, in order of first appearance, and
    the encoded samples of each (no side effects).

    Each run's list is walked against the series seen so far: stretches they share are copied a slice at a
    time, and only where they part is a series looked up by key (a series gone, one come, one moved)."""
    series: list[Key] = list(runs[0][0][1])
    columns = [_bodies(runs[0])]
    index: dict[Key, int] | None = None
    for run in runs[1:]:
        keys, bodies = run[0][1], _bodies(run)
        column = [b""] * len(series)
        i = j = 0
        while j < len(keys):
            shared = common_run(series, i, keys, j)
            if shared:
                column[i : i + shared] = bodies[j : j + shared]
                i, j = i + shared, j + shared
                continue
            if index is None:
                index = dict(zip(series, range(len(series)), strict=True))
            key = keys[j]
            found = index.get(key)
            if found is None:
                found = index[key] = len(series)
                series.append(key)
                column.append(bodies[j])
            else:
                column[found] = bodies[j]
            i, j = found + 1, j + 1
        columns.append(column)
    for column in columns:
        column.extend(repeat(b"", len(series) - len(column)))
    return series, list(map(b"".join, zip(*columns, strict=True)))


def _bodies(run: Sequence[Scrape]) -> list[bytes]:
    """The encoded samples of each series of scrapes that share one list of series (no side effects)."""
    columns = [_samples(ts, values) for ts, _, values in run]
    if len(columns) == 1:
        return columns[0]
    return list(map(b"".join, zip(*columns, strict=True)))


class Encoder:
    """Turns scrapes into ``WriteRequest`` bodies; remembers each series' encoded labels, and the labels of
    the last list of series it encoded, which a scrape shares with the scrapes before it until a series
    comes or goes."""

    def __init__(self) -> None:
        self._labels: dict[Key, bytes] = {}
        self._by_id: dict[int, tuple[Key, bytes]] = {}
        self._last: tuple[Sequence[Key], list[bytes] | None] = ((), [])
        self._seen: dict[int, tuple[Sequence[Key], bool]] = {}
        self._previous: tuple[list[Key], set[int]] = ([], set())  # the last push's keys, and their ids

    def timeseries(self, scrapes: Sequence[Scrape]) -> tuple[Sequence[Key], list[bytes]]:
        """The series of ``scrapes`` in order of first appearance and one encoded TimeSeries (without its
        field header) of each, its samples in time order (no side effects beyond the label caches).

        Consecutive scrapes of one list of series are encoded a scrape at a time instead of a sample at a
        time; where the list changes, the runs of scrapes are aligned by ``_aligned``, unless a list repeats
        a series (then its samples are matched by key one by one)."""
        runs = _runs(scrapes)
        if len(runs) == 1:
            keys = runs[0][0][1]
            labels = self._labels_of(keys)
            if labels is not None:
                return keys, list(map(bytes.__add__, labels, _bodies(runs[0])))
        if not all(self._distinct(run[0][1]) for run in runs):
            return self._by_key(runs)
        series, bodies = _aligned(runs)
        return series, list(map(bytes.__add__, map(self._label_bytes, series), bodies))

    def _by_key(self, runs: Sequence[Sequence[Scrape]]) -> tuple[list[Key], list[bytes]]:
        """``timeseries`` of runs of scrapes matched by key: a run is encoded a scrape at a time when its
        series are distinct, else a sample at a time (no side effects beyond the label caches)."""
        merged: dict[Key, list[bytes]] = {}
        for run in runs:
            keys = run[0][1]
            if self._distinct(keys):
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
        return list(merged), [self._label_bytes(key) + b"".join(encoded) for key, encoded in merged.items()]

    def distinct(self, keys: Sequence[Key]) -> None:
        """Take it that ``keys`` lists no series twice, without checking (its scraper knows)."""
        self._remember(keys, True)

    def _distinct(self, keys: Sequence[Key]) -> bool:
        """Whether no series is listed twice in ``keys``; remembered for the last few lists asked about."""
        found = self._seen.get(id(keys))
        if found is None or found[0] is not keys:
            return self._remember(keys, len(set(keys)) == len(keys))
        return found[1]

    def _remember(self, keys: Sequence[Key], distinct: bool) -> bool:
        # By id, with the list itself: an id is only reused once its list is gone, and the entry holds it.
        if len(self._seen) >= 32:
            self._seen.clear()
        self._seen[id(keys)] = (keys, distinct)
        return distinct

    def _labels_of(self, keys: Sequence[Key]) -> list[bytes] | None:
        """The encoded labels of each series of ``keys``, or None when a series is listed twice."""
        last, labels = self._last
        if keys is not last:
            labels = list(map(self._label_bytes, keys)) if self._distinct(keys) else None
            self._last = (keys, labels)
        return labels

    def _label_bytes(self, key: Key) -> bytes:
        # By the key object first: the scraper hands the same key objects from one scrape to the next, and a
        # key's hash is worked out afresh from all of its labels at every lookup by value.
        known = self._by_id.get(id(key))
        if known is not None and known[0] is key:
            return known[1]
        found = self._labels.get(key)
        if found is None:
            found = self._labels[key] = label_bytes(*key)
        if len(self._by_id) >= MAX_KEY_OBJECTS:
            self._by_id.clear()
        # The entry holds its key, so no other object can have its id while it is there.
        self._by_id[id(key)] = (key, found)
        return found

    def push(self, scrapes: Sequence[Scrape], *, max_series: int) -> Push:
        """Uncompressed ``WriteRequest`` bodies of at most ``max_series`` series each: first those of the
        series that were not in the last push (every series when there was none), then the others, each
        part in order of first appearance. The previous push is known by its key objects, which the
        encoder holds so that no other object can take their ids."""
        keys, series = self.timeseries(scrapes)
        known = self._previous[1]
        if known:
            flags = list(map(known.__contains__, map(id, keys)))
            fresh = list(compress(series, map(operator.not_, flags)))
            rest = list(compress(series, flags))
        else:
            fresh, rest = series, []
        self._previous = (list(keys), set(map(id, keys)))
        return Push(ordered=_requests(fresh, max_series), rest=_requests(rest, max_series))

    def forget(self) -> None:
        """Take it that no series of the last push is in Prometheus (its posting failed)."""
        self._previous = ([], set())


def _requests(series: Sequence[bytes], max_series: int) -> list[bytes]:
    """The encoded TimeSeries ``series`` as bodies of at most ``max_series`` each (no side effects)."""
    bodies = []
    for start in range(0, len(series), max_series):
        chunk = series[start : start + max_series]
        # Each series as a ``timeseries`` field (tag, length, body), joined without a loop in Python.
        fields = zip(repeat(b"\x0a"), map(_length, map(len, chunk)), chunk)
        bodies.append(b"".join(chain.from_iterable(fields)))
    return bodies


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
