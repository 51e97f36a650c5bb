"""The live run journal: append-only, hash-chained JSON Lines streams, flushed and fsynced per record (or,
within ``deferred_sync``, flushed per record and fsynced together at the end of the block).

Every line is the canonical JSON of one record plus ``prev``, the SHA-256 (hex) of the previous line of
the same stream; the first line of every stream chains to the genesis hash, SHA-256 of the run id. Lines
are canonical (sorted keys, no optional whitespace), so the same records give the same bytes. Wall-clock
facts go to the single ``runtime.json`` beside the streams, never into a stream.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from orchestrator.bundle.records import Record, RunManifest, stream_of
from orchestrator.errors import BundleError

RUNTIME_FILE = "runtime.json"
PREV_KEY = "prev"
STREAM_SUFFIX = ".jsonl"


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, no NaN (no side effects)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def genesis_hash(run_id: str) -> str:
    """The ``prev`` of the first line of every stream of run ``run_id``."""
    return sha256_hex(run_id.encode("utf-8"))


def encode_line(record: Record, prev: str) -> bytes:
    """The journal line of ``record`` chained to ``prev``, without its newline (no side effects)."""
    body = record.model_dump(mode="json")
    body[PREV_KEY] = prev
    return canonical_json(body).encode("utf-8")


@dataclass
class StreamScan:
    """What a stream file holds: its complete lines, chain problems, and an unterminated tail if any."""

    path: Path
    lines: list[bytes] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    head: str = ""
    partial_tail: bytes = b""

    @property
    def complete_bytes(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


def scan_stream(path: Path, *, genesis: str) -> StreamScan:
    """Read a stream file and check its chain from ``genesis``; problems (``line N: ...``) are collected."""
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    scan = StreamScan(path=path, lines=complete, head=genesis, partial_tail=tail)
    for number, line in enumerate(complete, start=1):
        try:
            prev = json.loads(line)[PREV_KEY]
        except (ValueError, KeyError, TypeError):
            scan.problems.append(f"line {number}: not a journal line (unparsable or no {PREV_KEY})")
            prev = None
        if prev is not None and prev != scan.head:
            before = "the genesis hash" if number == 1 else f"line {number - 1}"
            scan.problems.append(
                f"line {number}: does not chain to {before} "
                f"(a record was altered, deleted or inserted before it)"
            )
        scan.head = sha256_hex(line)
    return scan


class Journal:
    """Append-only writer of one run's streams in ``directory``; reopening continues every chain.

    On reopen after a crash, a stream's unterminated last line (a record that was never acknowledged) is
    cut off; a stream whose chain is broken is refused rather than extended.
    """

    def __init__(self, directory: Path, *, run_id: str, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.run_id = run_id
        self._fsync = fsync
        self._genesis = genesis_hash(run_id)
        self._heads: dict[str, str] = {}
        self._files: dict[str, IO[bytes]] = {}
        self._lock = threading.Lock()
        self._deferring = 0
        self._unsynced: set[str] = set()
        self.directory.mkdir(parents=True, exist_ok=True)

    def append(self, record: Record) -> str:
        """Write ``record`` to its stream, flushed and fsynced; returns the new line's hash."""
        if isinstance(record, RunManifest) and record.run_id != self.run_id:
            raise BundleError(
                f"{self.directory}: run_manifest.run_id = {record.run_id!r}, "
                f"but the journal is for {self.run_id!r}"
            )
        stream = stream_of(record)
        with self._lock:
            handle = self._handle(stream)
            line = encode_line(record, self._heads[stream])
            handle.write(line + b"\n")
            handle.flush()
            if self._fsync and self._deferring:
                self._unsynced.add(stream)
            elif self._fsync:
                os.fsync(handle.fileno())
            self._heads[stream] = sha256_hex(line)
            return self._heads[stream]

    @contextmanager
    def deferred_sync(self) -> Iterator[None]:
        """Within the block (from any thread), appends are written and flushed but not fsynced; every stream
        written is fsynced once when the block ends, so a batch of records becomes durable together."""
        with self._lock:
            self._deferring += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferring -= 1
                if not self._deferring:
                    self._sync_unsynced()

    def write_runtime(self, facts: Mapping[str, Any]) -> Path:
        """Replace the runtime file (host, real start time, durations) atomically."""
        path = self.directory / RUNTIME_FILE
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(canonical_json(dict(facts)) + "\n", encoding="utf-8")
        os.replace(temporary, path)
        return path

    def close(self) -> None:
        with self._lock:
            self._sync_unsynced()
            for handle in self._files.values():
                handle.close()
            self._files.clear()

    def _sync_unsynced(self) -> None:
        for stream in sorted(self._unsynced):
            handle = self._files.get(stream)
            if handle is not None:
                os.fsync(handle.fileno())
        self._unsynced.clear()

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _handle(self, stream: str) -> IO[bytes]:
        handle = self._files.get(stream)
        if handle is not None:
            return handle
        path = self.directory / f"{stream}{STREAM_SUFFIX}"
        head = self._genesis
        if path.exists():
            scan = scan_stream(path, genesis=self._genesis)
            if scan.problems:
                raise BundleError(f"{path}: refusing to extend a broken hash chain: {scan.problems[0]}")
            if scan.partial_tail:
                # The record was cut off mid-write, so it was never acknowledged: drop its bytes.
                with path.open("r+b") as cut:
                    cut.truncate(scan.complete_bytes)
            head = scan.head
        handle = path.open("ab")
        self._files[stream] = handle
        self._heads[stream] = head
        return handle
