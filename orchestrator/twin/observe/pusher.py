"""A child process that encodes a twin's scrapes and posts them by remote write, off the twin's interpreter.

Encoding and posting a run's series is seconds of Python; in a thread of the twin's process it takes the
interpreter lock from the steps that simulate the world. The child (``python -m`` this module, URL and series
per request as arguments) owns an ``Encoder`` and a ``RemoteWriteClient``; the twin's side, ``Pusher``,
writes frames to the child's stdin from a thread that mostly waits in the kernel:

    kind (1 byte), payload length (4 bytes, little endian), payload
    K  the list of series of the scrapes that follow, sent only when the list object changes (the scraper
       reuses one list per set of series): a flags byte (1: it lists no series twice, 2: forget the series
       numbered so far), the count of series (``I``), the number of each (``I`` each), and the series not
       numbered before, pickled, which take the next numbers in order. A series is numbered by its key
       object, which the scraper hands again from one scrape to the next: a changed list costs a lookup
       per series, not the pickling of all of them
    D  a list of series told by how it follows from the list before it, sent instead of a K frame when the
       scraper knows: a flags byte (1: it lists no series twice), the count of segments (``I``), each segment
       as two ``i`` (a start in the list before and a length, or -1 and a length for the next series of
       those that follow), and the series not in the list before, pickled. A list that changes a little
       costs its changes, not a lookup per series
    S  one scrape: its timestamp (``q``) and values (``d``), little endian, the bytes the digest took
    P  the scrapes since the last P are one push (the series and samples the same push in-process writes)
    F  answer when everything before is posted: an A frame with the requests and samples posted since the
       last answer (``qq``) and the text of the first ``TelemetryError`` since then, if any

The child posts nothing more after an error until it has answered with it, as the in-process pusher does,
and ends at the end of its stdin: when the twin closes it or when the twin's process is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, repeat
from pathlib import Path
from typing import IO

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.metrics import Key
from orchestrator.twin.observe.remote_write import Encoder, Push, RemoteWriteClient, Scrape

_HEADER = struct.Struct("<cI")
_COUNTS = struct.Struct("<qq")
_STAMP = struct.Struct("<q")
KEYS, DERIVED, SCRAPE, PUSH, FLUSH, ANSWER = b"K", b"D", b"S", b"P", b"F", b"A"
# The child's stdin holds a whole push of a large namespace (hundreds of kilobytes) where Linux lets it.
PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031
CLOSE_TIMEOUT_S = 60.0
# Key objects numbered before the numbering starts afresh (objects long gone are held no longer).
MAX_NUMBERED = 1 << 17
DISTINCT, RESTART = 1, 2
# Requests of a push posted side by side when they cannot create series: Prometheus takes each on a core.
POST_WORKERS = 2
_COUNT = struct.Struct("<I")


@dataclass(frozen=True)
class Derivation:
    """How a list of series follows from ``base``, the list of the scrape before it: ``segments`` of
    ``(start in base, length)``, or ``(-1, length)`` for the next ``length`` series of ``fresh``, in order."""

    base: list[Key]
    segments: list[tuple[int, int]]
    fresh: list[Key]


# A scrape's series, whether they are distinct, its packed bytes, and how its series follow from the last.
Outgoing = tuple[list[Key], bool, bytes, Derivation | None]


def _frame(kind: bytes, payload: bytes) -> bytes:
    return _HEADER.pack(kind, len(payload)) + payload


def _project_root() -> str:
    # This file is orchestrator/twin/observe/pusher.py: the child imports the package from the same tree.
    return str(Path(__file__).resolve().parents[3])


class Pusher:
    """The twin's end of a pushing child: ``push`` queues a push; ``mark`` returns an event that is set once
    every push so far is posted."""

    def __init__(self, url: str, *, max_series: int) -> None:
        self.url = url
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (_project_root(), env.get("PYTHONPATH"))))
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, url, str(max_series)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin: IO[bytes] = self._process.stdin
        self._stdout: IO[bytes] = self._process.stdout
        # A smaller pipe only makes the writing thread wait for the child more often.
        with contextlib.suppress(OSError):
            fcntl.fcntl(self._stdin.fileno(), _F_SETPIPE_SZ, PIPE_BYTES)
        self._queue: queue.Queue[list[Outgoing] | bytes | threading.Event | None] = queue.Queue()
        self._keys: list[Key] | None = None  # the list the child has; held so that its id stays its own
        self._numbers: dict[int, int] = {}  # the number of each key object the child has, by its id
        self._numbered: list[Key] = []  # those objects, held so that their ids stay theirs
        self._gone: TelemetryError | None = None
        self.error: TelemetryError | None = None
        self.requests = 0
        self.samples = 0
        self._thread = threading.Thread(target=self._loop, name="twin-remote-write", daemon=True)
        self._thread.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def push(self, scrapes: list[Outgoing]) -> None:
        self._queue.put(scrapes)

    def mark(self) -> threading.Event:
        """An event set once the child has posted every push so far (its counts and error are then here);
        pushes after it are not waited for."""
        done = threading.Event()
        self._queue.put(FLUSH)
        self._queue.put(done)
        return done

    def close(self) -> None:
        """End the child once it has posted what it was sent (it is killed if it takes over a minute); its
        counts are then here."""
        self._queue.put(FLUSH)
        self._queue.put(None)
        self._thread.join(timeout=CLOSE_TIMEOUT_S)
        try:
            self._process.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        finally:
            for stream in (self._stdin, self._stdout):
                with contextlib.suppress(OSError):
                    stream.close()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    self._stdin.close()  # the child posts what it has and ends
                    return
                if isinstance(item, threading.Event):
                    item.set()
                    continue
                if self._gone is None:
                    if item == FLUSH:
                        self._answer()
                    else:
                        assert isinstance(item, list)
                        self._send(item)
                if item == FLUSH and self._gone is not None:
                    self.error = self._gone
            except (OSError, ValueError, TelemetryError) as exc:
                self._gone = TelemetryError(
                    f"remote write to {self.url}: its process (pid {self._process.pid}) is gone: {exc}"
                )
                if item == FLUSH:
                    self.error = self._gone
            finally:
                self._queue.task_done()

    def _send(self, scrapes: list[Outgoing]) -> None:
        frames: list[bytes] = []
        for keys, distinct, packed, derived in scrapes:
            if keys is not self._keys:
                if derived is not None and derived.base is self._keys:
                    frames.append(_frame(DERIVED, _derivation(derived, distinct)))
                else:
                    frames.append(_frame(KEYS, self._listing(keys, distinct)))
                self._keys = keys
            frames.append(_frame(SCRAPE, packed))
        frames.append(_frame(PUSH, b""))
        self._stdin.write(b"".join(frames))
        self._stdin.flush()

    def _listing(self, keys: list[Key], distinct: bool) -> bytes:
        """The payload of a K frame for ``keys``; numbers the key objects not numbered before."""
        flags = DISTINCT if distinct else 0
        if len(self._numbered) + len(keys) > MAX_NUMBERED:
            self._numbers, self._numbered = {}, []
            flags |= RESTART
        numbers, numbered = self._numbers, self._numbered
        found = list(map(numbers.get, map(id, keys), repeat(-1)))
        start = len(numbered)
        for at in compress(range(len(keys)), map((-1).__eq__, found)):
            key = keys[at]
            number = numbers.get(id(key))
            if number is None:
                number = numbers[id(key)] = len(numbered)
                numbered.append(key)
            found[at] = number
        listed = array("I", found)
        return b"".join(
            (
                bytes((flags,)),
                _COUNT.pack(len(listed)),
                listed.tobytes(),
                pickle.dumps(numbered[start:], protocol=pickle.HIGHEST_PROTOCOL),
            )
        )

    def _answer(self) -> None:
        self._stdin.write(_frame(FLUSH, b""))
        self._stdin.flush()
        header = self._stdout.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise TelemetryError(f"it ended (exit code {self._process.poll()})")
        _, size = _HEADER.unpack(header)
        payload = self._stdout.read(size)
        requests, samples = _COUNTS.unpack_from(payload)
        self.requests += requests
        self.samples += samples
        text = payload[_COUNTS.size :].decode()
        if text:
            self.error = TelemetryError(text)


def _derivation(derived: Derivation, distinct: bool) -> bytes:
    """The payload of a D frame."""
    segments = array("i", [n for segment in derived.segments for n in segment])
    return b"".join(
        (
            bytes((DISTINCT if distinct else 0,)),
            _COUNT.pack(len(derived.segments)),
            segments.tobytes(),
            pickle.dumps(derived.fresh, protocol=pickle.HIGHEST_PROTOCOL),
        )
    )


def _derived(payload: bytes, base: Sequence[Key]) -> list[Key]:
    """The list of series of a D frame's payload, from ``base``, the list before it."""
    (count,) = _COUNT.unpack_from(payload, 1)
    start = 1 + _COUNT.size
    segments = array("i")
    segments.frombytes(payload[start : start + 8 * count])
    fresh: list[Key] = pickle.loads(payload[start + 8 * count :])
    keys: list[Key] = []
    taken = 0
    for origin, length in zip(segments[::2], segments[1::2], strict=True):
        if origin < 0:
            keys.extend(fresh[taken : taken + length])
            taken += length
        else:
            keys.extend(base[origin : origin + length])
    return keys


@lru_cache(maxsize=16)
def _values(count: int) -> struct.Struct:
    return struct.Struct(f"<{count}d")


def _listed(payload: bytes, numbered: list[Key]) -> tuple[list[Key], list[Key]]:
    """The list of series of a K frame's payload, and the key objects numbered once it is read."""
    if payload[0] & RESTART:
        numbered = []
    (count,) = _COUNT.unpack_from(payload, 1)
    start = 1 + _COUNT.size
    numbers = array("I")
    numbers.frombytes(payload[start : start + 4 * count])
    numbered.extend(pickle.loads(payload[start + 4 * count :]))
    return list(map(numbered.__getitem__, numbers)), numbered


def _read(source: IO[bytes], size: int) -> bytes | None:
    data = source.read(size)
    if len(data) < size:
        return None  # the twin closed the pipe, or its process is gone
    return data


class _Posts:
    """Posts the requests of one push (``remote_write.Push``): those that may create series one after
    another, in order, then the others ``workers`` at a time. Prometheus numbers series as it creates them:
    posted in order, equal runs number theirs alike, however the other requests race. Appending to series
    it has commutes (each series is in one request of a push, and a push ends before the next begins)."""

    def __init__(self, url: str, *, workers: int) -> None:
        self.url = url
        self._local = threading.local()
        self._clients: list[RemoteWriteClient] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="post")

    def post(self, push: Push) -> int:
        """Post every request of ``push``; how many, or the first error (in request order)."""
        for body in push.ordered:
            self._post(body)
        futures = [self._pool.submit(self._post, body) for body in push.rest]
        wait(futures)
        for future in futures:
            future.result()
        return len(push.ordered) + len(futures)

    def _post(self, body: bytes) -> None:
        client: RemoteWriteClient | None = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = RemoteWriteClient(self.url, retries=2, timeout_s=30.0)
            with self._lock:
                self._clients.append(client)
        client.post(body)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for client in self._clients:
            client.close()


def serve(url: str, max_series: int, source: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: frames from ``source`` until its end, answers to ``replies``."""
    encoder = Encoder()
    posts = _Posts(url, workers=POST_WORKERS)
    keys: Sequence[Key] = []
    numbered: list[Key] = []
    scrapes: list[Scrape] = []
    requests = samples = 0
    error: TelemetryError | None = None
    try:
        while (header := _read(source, _HEADER.size)) is not None:
            kind, size = _HEADER.unpack(header)
            payload = _read(source, size) if size else b""
            if payload is None:
                return
            if kind in (KEYS, DERIVED):
                if kind == KEYS:
                    keys, numbered = _listed(payload, numbered)
                else:
                    keys = _derived(payload, keys)
                if payload[0] & DISTINCT:
                    encoder.distinct(keys)
            elif kind == SCRAPE:
                values = _values((size - _STAMP.size) // 8).unpack_from(payload, _STAMP.size)
                scrapes.append((_STAMP.unpack_from(payload)[0], keys, values))
            elif kind == PUSH:
                batch, scrapes = scrapes, []
                if error is None and batch:
                    try:
                        requests += posts.post(encoder.push(batch, max_series=max_series))
                        samples += sum(len(values) for _, _, values in batch)
                    except TelemetryError as exc:
                        error = exc
                        encoder.forget()
            elif kind == FLUSH:
                text = b"" if error is None else str(error).encode()
                replies.write(_frame(ANSWER, _COUNTS.pack(requests, samples) + text))
                replies.flush()
                requests = samples = 0
                error = None
            else:
                raise ValueError(f"unknown frame kind {kind!r}")
    finally:
        posts.close()


def main(argv: Sequence[str] | None = None) -> int:
    url, max_series = argv if argv is not None else sys.argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the twin's process ends this one, by closing its stdin
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing printed by accident can be taken for an answer
    source = os.fdopen(0, "rb", buffering=PIPE_BYTES)
    serve(url, int(max_series), source, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
