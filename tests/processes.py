"""Process checks the tests share: whether a pid still runs, waiting for pids to end, and finding processes
by command line (a sandboxed agent's pids are of its own PID namespace, so they mean nothing here)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie nobody reaped yet has exited all the same."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(*pids: int, within: float = 5.0) -> bool:
    """Wait up to ``within`` seconds for every one of ``pids`` to end; whether they all did."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(pid) for pid in pids)


def running_with(marker: str) -> list[int]:
    """Pids on this machine whose command line holds ``marker`` (arguments joined by spaces)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)):
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline.replace(b"\0", b" "):
                found.append(int(entry.name))
    return found


def unique_sleep() -> str:
    """A ``sleep`` command line no other process on the machine has, to find a test's own children by."""
    return f"sleep 4{secrets.randbelow(10**6):06d}.5"
