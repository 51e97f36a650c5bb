"""One invocation of the agent under test: a fresh process in its own process group, killed with every
process of that group at the budget, its output appended to the run's agent log.

A built-in agent (``<this interpreter> -m orchestrator.agents.<name>``) is forked from a template process
that has already imported it (``orchestrator.run.warmstart``), which saves most of a second per invocation;
any other command is spawned. Both get the same working directory, environment, process group and log.

The agent sees only a small allow-listed environment plus the protocol's variables, so nothing of the
orchestrator's own environment (an upstream model key, say) leaks to it. Unless the run is explicitly
unsandboxed, both paths run the agent inside its sandbox (``orchestrator.run.sandbox``): a spawned command is
wrapped in a fresh sandbox per invocation, and the template runs in one sandbox for the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from orchestrator.errors import AgentError
from orchestrator.run import warmstart
from orchestrator.run.sandbox import Sandbox

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
    if pgid <= 1:
        return False  # 0 would be our own group, and a forked child without its pid has no group to kill
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
    warm: bool = True  # fork the built-in Python agents from a pre-imported template (see warmstart)
    sandbox: Sandbox | None = None  # None only when the run is explicitly unsandboxed
    _template: warmstart.Template | None = field(default=None, init=False, repr=False)

    @property
    def cwd(self) -> str:
        """The workspace as the agent sees it."""
        return self.sandbox.inside(self.workspace) if self.sandbox is not None else str(self.workspace)

    def invoke(
        self, n: int, *, env: Mapping[str, str], budget_s: float, stop: threading.Event | None = None
    ) -> Outcome:
        """Run invocation ``n`` to its end or its budget (wall seconds), whichever comes first.

        ``stop`` ends it early the same way the budget does. Leftover processes (children the agent left
        running) are killed when it exits, so nothing of it acts after the invocation.
        """
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- invocation {n} ---\n".encode())
            log.flush()
            began = time.monotonic()
            child = self._start(env, log)
            timed_out = stopped = False
            deadline = began + budget_s
            while not child.wait(min(POLL_S * 5, max(POLL_S, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                if stop is not None and stop.is_set():
                    stopped = True
                    break
            code = child.end()
            wall = time.monotonic() - began
            note = "killed at the budget" if timed_out else "stopped" if stopped else f"exit {code}"
            log.write(f"--- invocation {n}: {note} after {wall:.2f} s ---\n".encode())
        return Outcome(
            exit_code=None if timed_out or stopped else code,
            timed_out=timed_out,
            stopped=stopped,
            wall_s=wall,
        )

    def prepare(self) -> None:
        """Start the warm-start template of a built-in agent now, in the background, so that its imports
        overlap with the run's first boundary instead of delaying the first invocation; it is started at
        the first invocation otherwise. A template that cannot start leaves the command to be spawned."""
        module = warmstart.warm_module(self.command) if self.warm else None
        if module is None or self._template is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            try:
                self._template = warmstart.Template(
                    module, env=agent_environment({}), log=log, sandbox=self.sandbox, wait=False
                )
            except (AgentError, OSError) as exc:
                log.write(f"--- warm start failed ({exc}); spawning the command instead ---\n".encode())
                self.warm = False

    def close(self) -> None:
        """End the warm-start template, if one was started (the run is over)."""
        if self._template is not None:
            self._template.close()
            self._template = None

    def _environment(self, env: Mapping[str, str]) -> dict[str, str]:
        if self.sandbox is None:
            return dict(env)
        return {**env, "HOME": self.cwd, "TMPDIR": "/tmp"}  # the host's are not in the agent's view

    def _start(self, env: Mapping[str, str], log: BinaryIO) -> _Child:
        module = warmstart.warm_module(self.command) if self.warm else None
        if module is not None:
            log.flush()
            try:
                if self._template is None:
                    self._template = warmstart.Template(
                        module, env=agent_environment({}), log=log, sandbox=self.sandbox
                    )
                pid = self._template.fork(workspace=self.cwd, env=self._environment(env))
                return _Forked(self._template, self, pid)
            except AgentError as exc:
                log.write(f"--- warm start failed ({exc}); spawning the command instead ---\n".encode())
                log.flush()
                self.close()
                self.warm = False
        try:
            start = subprocess.Popen if self.sandbox is None else self.sandbox.start
            process = start(
                list(self.command),
                cwd=self.workspace,
                env=self._environment(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own session and process group, killed as one
            )
        except OSError as exc:
            raise AgentError(f"cannot start the agent {list(self.command)!r}: {exc}") from exc
        return _Spawned(process)


class _Child(Protocol):
    def wait(self, timeout: float) -> bool:
        """True once the process has ended (waits up to ``timeout`` seconds)."""

    def end(self) -> int:
        """Kill it and everything it started if anything is still running; its exit code."""


@dataclass
class _Spawned:
    process: subprocess.Popen[bytes]

    def wait(self, timeout: float) -> bool:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def end(self) -> int:
        # The group is killed even after a clean exit: children it left behind go with it (and in a
        # sandbox, the namespace's first process, which takes every other process of it along).
        kill_group(self.process.pid)
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


@dataclass
class _Forked:
    template: warmstart.Template
    owner: AgentProcess
    pid: int  # as the template sees it: in the sandbox's PID namespace, if there is one
    code: int | None = None

    def wait(self, timeout: float) -> bool:
        if self.code is None:
            self.code = self._exit_code(timeout)
        return self.code is not None

    def end(self) -> int:
        if self.code is None:
            self.code = self.template.end()
        if self.code is None:
            # The template did not answer: it is ended with everything in its group (its sandbox), and
            # the next invocation spawns the command instead.
            if self.owner.sandbox is None:
                kill_group(self.pid)
            self.owner.close()
            self.owner.warm = False
            self.code = -1
        return self.code

    def _exit_code(self, timeout: float) -> int | None:
        try:
            return self.template.wait(timeout)
        except AgentError:
            # The template died: nobody will report this child's exit. A sandbox is ended with the
            # template; unsandboxed, the child's process group is ours to kill. The next invocation finds
            # the template gone and spawns instead.
            if self.owner.sandbox is None:
                kill_group(self.pid)
            self.template.close()
            return -1
