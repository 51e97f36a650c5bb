"""Scrapes of the twin's series at simulated instants, pushed to Prometheus by remote write.

Every ``scrape`` buffers one sample per series at its simulated timestamp; every few scrapes the buffer is
handed to a pushing child process (``pusher``) that encodes and sends it (one TimeSeries per series with its
samples, in time order), and ``flush`` waits until all of it is in Prometheus. A twin given its URL late
(``send_to``) pushes from a thread of its own process instead. A series that
disappears gets a staleness marker, as a scraping Prometheus would write. A digest of every sample (unless
the twin is told to keep none), and optionally the samples themselves, are kept so that two runs can be
compared byte for byte.
"""

from __future__ import annotations

import hashlib
import math
import queue
import struct
import threading
from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import starmap

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.alignment import Alignment, Positions, align
from orchestrator.twin.observe.metrics import Key, Labels, Sample
from orchestrator.twin.observe.pusher import Derivation, Outgoing, Pusher
from orchestrator.twin.observe.remote_write import Encoder, RemoteWriteClient
from orchestrator.twin.timefmt import epoch_s

# Prometheus' staleness marker: a NaN with this exact bit pattern ends a series at that timestamp.
STALE_NAN: float = struct.unpack(">d", bytes.fromhex("7ff0000000000002"))[0]
SCRAPE_SECONDS = 15.0
MAX_SERIES_PER_REQUEST = 5000
# Scrapes per push while the world moves (one simulated minute); ``flush`` pushes the rest. With boundaries
# two minutes apart, the first half of a boundary's series is in Prometheus while the second is simulated,
# and a boundary waits for half of them. Prometheus ingests the same samples either way (new series in the
# order they first appear), for a little more work per sample than with larger pushes.
SCRAPES_PER_PUSH = 4
# Series names per update of the digest: a block of a few tens of kilobytes, which the allocator reuses.
DIGEST_BLOCK = 256


_Taken = tuple[int, list[Key], list[float]]  # a scrape held or for the thread: time (ms), series, values


def timestamp_ms(now: float) -> int:
    """Milliseconds since the Unix epoch of a simulated instant."""
    return round(epoch_s() * 1000) + round(now * 1000)


@lru_cache(maxsize=262144)
def _series(name: str, labels: Labels) -> str:
    body = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{name}{{{body}}}"


def _update_joined(digest: hashlib._Hash, texts: list[str]) -> None:
    """``digest.update("\\n".join(texts).encode())``, a block of texts at a time: the same bytes reach the
    digest without a buffer of the whole list, which is megabytes for a large namespace and costs a page
    fault per page each time it is made afresh."""
    for start in range(0, len(texts), DIGEST_BLOCK):
        if start:
            digest.update(b"\n")
        digest.update("\n".join(texts[start : start + DIGEST_BLOCK]).encode())


def _derivation(sent: list[Key], last: list[Key], keys: list[Key], found: Alignment) -> Derivation:
    """How ``keys`` and then the series of ``last`` it lost (sorted, as they go stale) follow from ``sent``,
    the list sent before, which starts with ``last`` (no side effects)."""
    segments = [(origin, length) for _, origin, length in found.stretches]
    fresh = [
        key for start, origin, length in found.stretches if origin < 0 for key in keys[start : start + length]
    ]
    segments.extend((at, 1) for at in sorted(found.uncovered, key=last.__getitem__))
    return Derivation(sent, segments, fresh)


def _format(name: str, labels: Labels, value: float, ts: int) -> str:
    text = "stale" if math.isnan(value) else repr(value)
    return f"{_series(name, labels)} {text} {ts}"


class Telemetry:
    """The scrape buffer and remote-write pusher of one twin."""

    def __init__(
        self, *, remote_write_url: str | None, keep_samples: bool = False, digest: bool = True
    ) -> None:
        self.url = remote_write_url
        self.keep_samples = keep_samples
        self.samples: list[str] = []
        self._digest = hashlib.sha256() if digest else None
        self._scrapes: list[_Taken] = []  # for a thread or held
        self._outgoing: list[Outgoing] = []  # for the pushing child
        self._last_keys: list[Key] = []
        self._last_names: list[str] = []  # the exposition name of each of ``_last_keys``
        self._last_distinct = True  # whether ``_last_keys`` lists every series once
        self._sent: list[Key] | None = None  # the list of the last scrape for the pushing child
        self._positions: Positions | None = None  # of ``_last_keys``, kept while they are distinct
        self._writer: RemoteWriteClient | None = None
        self._encoder = Encoder()
        self._queue: queue.Queue[list[_Taken] | threading.Event | None] | None = None
        self._thread: threading.Thread | None = None
        self._error: TelemetryError | None = None
        self._held: list[tuple[list[bytes], int]] | None = None  # requests encoded, and their samples
        self._child: Pusher | None = None
        self.scrapes = 0
        self._pushed_samples = 0
        self._requests = 0
        if remote_write_url is not None:
            self._child = Pusher(remote_write_url, max_series=MAX_SERIES_PER_REQUEST)

    @property
    def requests(self) -> int:
        """Write requests posted, as of the last ``flush``."""
        return self._requests + (self._child.requests if self._child is not None else 0)

    @property
    def pushed_samples(self) -> int:
        """Samples in Prometheus, as of the last ``flush``."""
        return self._pushed_samples + (self._child.samples if self._child is not None else 0)

    @property
    def digest(self) -> str | None:
        """The digest of every sample so far; None when it is not kept (a marathon never reads it)."""
        return None if self._digest is None else self._digest.hexdigest()

    def scrape(self, now: float, samples: Iterable[Sample]) -> None:
        """Record one sample per series at ``now``; series gone since the last scrape go stale."""
        listed = samples if isinstance(samples, list) else list(samples)
        self.record(now, [(name, labels) for name, labels, _ in listed], [value for _, _, value in listed])

    def record(self, now: float, keys: list[Key], values: list[float]) -> None:
        """``scrape`` of the series ``keys`` with ``values`` (both lists are the buffer's from now on)."""
        ts = timestamp_ms(now)
        derived: Derivation | None = None
        if keys == self._last_keys:
            keys = self._last_keys  # one list for every scrape of the same series: the encoder sees so
            if self._sent is not None and self._sent is not keys:  # the last list had stale series after it
                derived = Derivation(self._sent, [(0, len(keys))], [])
        else:
            last = self._last_keys
            gone, found = self._changed(keys)
            names = self._named(keys, found) if self._digest is not None else []  # only the digest reads
            if found is not None and self._sent is not None:  # only the pushing child is sent lists
                derived = _derivation(self._sent, last, keys, found)
            self._last_keys, self._last_names = (list(keys) if gone else keys), names
            keys.extend(gone)
            values.extend(STALE_NAN for _ in gone)
            if self._last_distinct:
                self._encoder.distinct(keys)
            if self._digest is not None:
                _update_joined(self._digest, [*names, *starmap(_series, gone)])
        packed = struct.pack(f"<q{len(values)}d", ts, *values)
        if self._digest is not None:
            self._digest.update(packed)
        if self._child is not None:
            self._outgoing.append((keys, self._last_distinct, packed, derived))
            self._sent = keys
        else:
            self._scrapes.append((ts, keys, values))
        if self.keep_samples:
            self.samples.extend(
                _format(n, labels, v, ts) for (n, labels), v in zip(keys, values, strict=True)
            )
        self.scrapes += 1
        if len(self._scrapes) + len(self._outgoing) >= SCRAPES_PER_PUSH:
            self._hand_over()

    def _changed(self, keys: list[Key]) -> tuple[list[Key], Alignment | None]:
        """The series of the last scrape that ``keys`` no longer lists, sorted, and how ``keys`` follows
        from the last list (None when they were compared as sets, as a list that repeats a series is). No
        side effects beyond what is remembered of the lists."""
        last, positions = self._last_keys, self._positions
        found = None
        if self._last_distinct:
            if positions is None:
                positions = Positions(last)
            found = align(last, keys, positions.get)
        if found is None or positions is None:
            current = set(keys)
            self._last_distinct = len(current) == len(keys)
            self._positions = None
            return sorted(set(last) - current), None
        positions.follow(last, keys, found)
        self._positions = positions
        self._last_distinct = True
        return sorted(last[at] for at in found.uncovered), found

    def _named(self, keys: list[Key], found: Alignment | None) -> list[str]:
        """The exposition name of each of ``keys``: aligned with the last list (``found``), the names of the
        stretches both share are copied and only the series that came are named (no side effects)."""
        if found is None:
            return list(starmap(_series, keys))
        names: list[str] = []
        for start, origin, length in found.stretches:
            if origin < 0:
                names.extend(starmap(_series, keys[start : start + length]))
            else:
                names.extend(self._last_names[origin : origin + length])
        return names

    def hold(self) -> None:
        """Keep every scrape until ``send_to`` names a Prometheus, instead of dropping them for want of a
        URL: a twin moved before its copies, each with its own Prometheus, go their own ways."""
        if self.url is not None:
            raise TelemetryError(f"the twin's series already go to {self.url}")
        self._held = []

    def send_to(self, remote_write_url: str) -> None:
        """Push to ``remote_write_url`` from now on, as if it had been the URL from the start; returns once
        the scrapes held so far are there (their requests were encoded as they were held, so that copies of
        a holding twin share that work)."""
        if self.url is not None:
            raise TelemetryError(f"the twin's series already go to {self.url}")
        self.url = remote_write_url
        self._queue = queue.Queue()
        self._writer = RemoteWriteClient(remote_write_url, retries=2, timeout_s=30.0)
        held, self._held = self._held or [], None
        for bodies, samples in held:
            for body in bodies:
                self._writer.post(body)
                self._requests += 1
            self._pushed_samples += samples

    def flush(self) -> None:
        """Push everything scraped so far and wait until Prometheus has it; without a URL, drop it."""
        self.flush_begin()()

    def flush_begin(self) -> Callable[[], None]:
        """Push everything scraped so far, and return the call that waits until Prometheus has it and raises
        the first error of a push since the last wait. Scrapes recorded meanwhile are not waited for."""
        self._hand_over()
        child = self._child
        if child is not None:
            done = child.mark()
        elif self._queue is not None:
            done = threading.Event()  # set by the pushing thread once it reaches it
            self._queue.put(done)
            if self._thread is None:
                self._start_pushing()
        else:
            return lambda: None

        def wait() -> None:
            done.wait()
            if child is not None:
                error, child.error = child.error, None
            else:
                error, self._error = self._error, None
            if error is not None:
                raise error

        return wait

    def _hand_over(self) -> None:
        if self._child is not None:
            outgoing, self._outgoing = self._outgoing, []
            if outgoing:
                self._child.push(outgoing)
            return
        scrapes, self._scrapes = self._scrapes, []
        if self._held is not None:
            if scrapes:
                bodies = self._encoder.push(scrapes, max_series=MAX_SERIES_PER_REQUEST).bodies
                self._held.append((bodies, sum(len(values) for _, _, values in scrapes)))
            return
        if self._queue is None or not scrapes:
            return
        if self._thread is None:
            self._start_pushing()
        self._queue.put(scrapes)

    def _start_pushing(self) -> None:
        self._thread = threading.Thread(target=self._push_loop, name="twin-remote-write", daemon=True)
        self._thread.start()

    def _push_loop(self) -> None:
        # Pushing overlaps with the next steps' simulation; Prometheus ingests in its own process.
        assert self._queue is not None
        while True:
            scrapes = self._queue.get()
            try:
                if scrapes is None:
                    return
                if isinstance(scrapes, threading.Event):
                    scrapes.set()
                elif self._error is None:
                    self._push(scrapes)
            except TelemetryError as exc:
                self._error = exc
                self._encoder.forget()
            finally:
                self._queue.task_done()

    def _push(self, scrapes: list[_Taken]) -> None:
        assert self._writer is not None
        for body in self._encoder.push(scrapes, max_series=MAX_SERIES_PER_REQUEST).bodies:
            self._writer.post(body)
            self._requests += 1
        self._pushed_samples += sum(len(values) for _, _, values in scrapes)

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
            self._requests += self._child.requests
            self._pushed_samples += self._child.samples
            self._child = None
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=60)
            self._thread = None
        if self._writer is not None:
            self._writer.close()
