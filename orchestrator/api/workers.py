"""Runs in worker processes: one spawned process per run, so a marathon never blocks the API's event loop.

The parent and the worker share one duplex pipe. The worker sends ``("event", RunEvent)`` for every runner
event (the typed event itself), then one ``("result", dict)`` or ``("error", str)``; the parent sends
``"stop"``. When the pipe
breaks before the run is over, the server is gone: the worker takes its whole process tree down with it,
so an in-process twin and its Prometheus never outlive the server that was watching them. The revert
ledger on disk is what the next server settles.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from orchestrator.run.events import RunEvent

_SPAWN = multiprocessing.get_context("spawn")
STOP = "stop"


def _descendants(root: int) -> list[int]:
    """PIDs below ``root`` in the process tree, read from /proc (children before their children)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow its last ')'.
        ppid = int(text[text.rindex(")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    frontier = [root]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found.extend(children)
        frontier.extend(children)
    return found


def _die_with_tree() -> None:
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class _Link:
    """The worker's end of the pipe, and the run's event handler; sends are serialised because events come
    from several threads."""

    conn: Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)

    def send(self, message: tuple[str, Any]) -> None:
        with self.lock:
            try:
                self.conn.send(message)
            except (BrokenPipeError, OSError):
                if not self.done.is_set():
                    _die_with_tree()

    def handle(self, event: RunEvent) -> None:
        self.send(("event", event))


def _listen(link: _Link, stop: threading.Event) -> None:
    try:
        while True:
            if link.conn.recv() == STOP:
                stop.set()
    except (EOFError, OSError):
        if not link.done.is_set():
            _die_with_tree()


def worker_main(config_json: str, conn: Connection, log_path: str) -> None:
    """The worker's entry point: run one marathon and report back over ``conn``."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    # Ctrl-C at the server's terminal is the server's to handle: it stops its runs itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from orchestrator.run.config import RunConfig
    from orchestrator.run.runner import run_marathon

    link = _Link(conn)
    stop = threading.Event()
    threading.Thread(target=_listen, args=(link, stop), daemon=True, name="control").start()
    try:
        config = RunConfig.model_validate_json(config_json)
        result = run_marathon(config, events=link, stop=stop)
        message: tuple[str, Any] = (
            "result",
            {
                "run_id": result.run_id,
                "bundle_dir": str(result.bundle_dir),
                "run_dir": str(result.run_dir),
                "score": result.score,
                "reason": result.reason,
                "wall_s": result.wall_s,
            },
        )
    except BaseException as exc:  # reported to the server, which records the run as failed
        message = ("error", f"{type(exc).__name__}: {exc}")
    print(f"worker: {message[0]}", file=sys.stderr, flush=True)
    link.done.set()
    link.send(message)
    conn.close()


@dataclass
class Worker:
    """The parent's handle on one worker process."""

    process: BaseProcess
    conn: Connection

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def stop(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):  # the worker has already ended
            self.conn.send(STOP)


def start_worker(config_json: str, *, log_path: Path) -> Worker:
    parent, child = _SPAWN.Pipe(duplex=True)
    process = _SPAWN.Process(
        target=worker_main, args=(config_json, child, str(log_path)), daemon=False, name="marathon-run"
    )
    process.start()
    child.close()  # only the worker holds its end: its death shows here as EOF
    return Worker(process=process, conn=parent)
