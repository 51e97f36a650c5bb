"""The event log of one run: what its runner reported and what the control plane added, numbered, in their
wire form (``orchestrator.run.events.wire``), kept in memory for live readers and appended to
``events.jsonl`` in the run's home so a finished or interrupted run replays after a restart.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.run.events import Event, ServicePoint, wire

EVENTS_FILE = "events.jsonl"


@dataclass
class EventLog:
    home: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, home: Path, *, closed: bool) -> EventLog:
        """The events a run left on disk; a torn last line (the server died mid-write) is dropped."""
        log = cls(home=home, closed=closed)
        path = home / EVENTS_FILE
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    log.events.append(json.loads(line))
                except json.JSONDecodeError:
                    break
        return log

    def append(self, event: Event) -> dict[str, Any]:
        """Number the event and keep its wire form; returns what readers will see."""
        with self._lock:
            numbered = {"seq": len(self.events), **wire(event)}
            self.events.append(numbered)
            with (self.home / EVENTS_FILE).open("a", encoding="utf-8") as out:
                out.write(json.dumps(numbered, sort_keys=True, separators=(",", ":")) + "\n")
            return numbered

    def since(self, seq: int) -> tuple[list[dict[str, Any]], bool]:
        """Events numbered ``seq`` and later, and whether no more will come."""
        with self._lock:
            return list(self.events[seq:]), self.closed

    def close(self) -> None:
        with self._lock:
            self.closed = True


@dataclass
class ServiceTail:
    """Follows the run journal's entry-point samples (error ratio) as the runner appends them."""

    path: Path
    offset: int = 0

    def new_samples(self) -> list[ServicePoint]:
        if not self.path.is_file():
            return []
        with self.path.open("rb") as stream:
            stream.seek(self.offset)
            data = stream.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        samples = []
        for line in complete.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            samples.append(ServicePoint(t=record["t"], q=record["q"], e=record["e"]))
        return samples
