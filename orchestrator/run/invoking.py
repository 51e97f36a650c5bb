"""One invocation of the agent under test: a fresh process in its own process group, killed with every
process of that group at the budget, its output appended to the run's agent log.

The agent sees only a small allow-listed environment plus the protocol's variables, so nothing of the
orchestrator's own environment (an upstream model key, say) leaks to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import AgentError

# Variables an ordinary program needs to start; everything else the agent gets is set by the protocol.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL",
             "PYTHONPATH", "VIRTUAL_ENV", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")  # fmt: skip
POLL_S = 0.02


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    timed_out: bool
    stopped: bool
    wall_s: float


def agent_environment(
    protocol: Mapping[str, str], *, inherit: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed part of ``inherit`` (the process environment) plus ``protocol`` (no side effects)."""
    source = os.environ if inherit is None else inherit
    env = {name: source[name] for name in INHERITED if name in source}
    env.update(protocol)
    return env


def kill_group(pgid: int) -> bool:
    """SIGKILL every process of group ``pgid``; False when none was left."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


@dataclass
class AgentProcess:
    """Starts the agent command in ``workspace`` for each invocation and enforces the budget."""

    command: Sequence[str]
    workspace: Path
    log_path: Path

    def invoke(
        self, n: int, *, env: Mapping[str, str], budget_s: float, stop: threading.Event | None = None
    ) -> Outcome:
        """Run invocation ``n`` to its end or its budget (wall seconds), whichever comes first.

        ``stop`` ends it early the same way the budget does. Leftover processes of the group (children
        the agent left running) are killed when it exits, so nothing of it acts after the invocation.
        """
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- invocation {n} ---\n".encode())
            log.flush()
            began = time.monotonic()
            try:
                process = subprocess.Popen(
                    list(self.command),
                    cwd=self.workspace,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own session and process group, killed as one
                )
            except OSError as exc:
                raise AgentError(f"cannot start the agent {list(self.command)!r}: {exc}") from exc
            timed_out = stopped = False
            deadline = began + budget_s
            while process.poll() is None:
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                if stop is not None and stop.is_set():
                    stopped = True
                    break
                try:
                    process.wait(timeout=min(POLL_S * 5, max(POLL_S, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    continue
            kill_group(process.pid)
            code = process.wait()
            wall = time.monotonic() - began
            note = "killed at the budget" if timed_out else "stopped" if stopped else f"exit {code}"
            log.write(f"--- invocation {n}: {note} after {wall:.2f} s ---\n".encode())
        return Outcome(
            exit_code=None if timed_out or stopped else code,
            timed_out=timed_out,
            stopped=stopped,
            wall_s=wall,
        )
