"""Warm starts for the built-in Python agents: each invocation is forked from a template process that has
already imported them, instead of starting an interpreter and importing the `mcp` SDK again, which costs
most of a second of CPU per invocation.

The template (``python -m orchestrator.run.warmstart``) belongs to one run's ``AgentProcess``. It imports the
agent modules, then serves one request at a time over its stdin and stdout, one JSON line each way: it forks,
answers that the child started, waits for the child to end or for a request to kill it, kills whatever the
child left behind, and answers with its exit code. It only imported modules and never runs agent code
itself, so every child is as fresh as a spawned process, and the child then does what a spawned command
would have had done for it: a new session and process group, the workspace as working directory, exactly
the protocol environment, stdin from /dev/null, stdout and stderr appended to the agent log (the template's
standard error). Under the sandbox the template runs inside it, so the pids it knows are of the sandbox's
PID namespace and only it can kill them. The template ends when its stdin closes, so it never outlives the
run that started it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Any, BinaryIO

from orchestrator.agents import AGENT_NAMES
from orchestrator.errors import AgentError
from orchestrator.run.sandbox import Sandbox

AGENTS_PACKAGE = "orchestrator.agents."
PRELOAD = tuple(AGENTS_PACKAGE + name for name in AGENT_NAMES)
# What the tool client imports only when it first connects (the HTTP transport and the asyncio backend of
# its portal): imported once here instead of in every invocation.
RUNTIME = ("anyio._backends._asyncio", "httpcore2", "h11", "truststore")
READY_TIMEOUT_S = 60.0
SWEEP = "--sweep"


def warm_module(command: Sequence[str]) -> str | None:
    """The agent module a command runs when it is ``<this interpreter> -m orchestrator.agents.<name>``
    (how ``orchestrator.agents.AGENTS`` names the built-in agents), else None (no side effects)."""
    if len(command) != 3 or command[1] != "-m" or not command[2].startswith(AGENTS_PACKAGE):
        return None
    if os.path.realpath(command[0]) != os.path.realpath(sys.executable):
        return None
    return command[2]


class Template:
    """The runner's side of one template process."""

    def __init__(self, module: str, *, env: Mapping[str, str], log: BinaryIO,
                 sandbox: Sandbox | None = None, wait: bool = True) -> None:  # fmt: skip
        """``env`` is the template's own environment: the allow-listed part of ours, so that nothing of the
        orchestrator's (an upstream model key, say) is in the process the agents are forked from. ``log``
        (the agent log) is its standard error, which every invocation writes to. With a ``sandbox`` the
        template runs inside it and sweeps the sandbox's PID namespace after each invocation. Unless
        ``wait``, the template imports in the background and the first ``fork`` waits for it."""
        self.module = module
        command = [sys.executable, "-m", "orchestrator.run.warmstart", module]
        start = subprocess.Popen if sandbox is None else sandbox.start
        self._process = start(
            command if sandbox is None else [*command, SWEEP],
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # a terminal's Ctrl-C is the runner's to handle, not the template's
        )
        self._buffer = b""
        self._ready = False
        if wait:
            self._await_ready()

    def _await_ready(self) -> None:
        if self._ready:
            return
        if self._read(READY_TIMEOUT_S) is None:  # {"ready": true} once the imports are done
            self.close()
            raise AgentError(
                f"the agent template for {self.module} was not ready within {READY_TIMEOUT_S:.0f} s"
            )
        self._ready = True

    def fork(self, *, workspace: str, env: Mapping[str, str]) -> int:
        """Start one invocation in ``workspace`` (a path as the template sees it); the pid of its process
        (also its process group and session) as the template sees it."""
        self._await_ready()
        self._write({"cwd": workspace, "env": dict(env)})
        reply = self._read(READY_TIMEOUT_S)
        if reply is None or reply.get("started") is not True or not isinstance(reply.get("pid"), int):
            raise AgentError(f"the agent template for {self.module} did not start the invocation: {reply!r}")
        return int(reply["pid"])

    def wait(self, timeout: float) -> int | None:
        """The exit code once the invocation's process has ended, or None after ``timeout`` seconds."""
        reply = self._read(timeout)
        if reply is None:
            return None
        return int(reply.get("exit", -1))

    def end(self) -> int | None:
        """Kill the running invocation with everything it started; its exit code, or None when the
        template does not answer in time (it is then ended itself)."""
        try:
            self._write({"kill": True})
            return self.wait(READY_TIMEOUT_S)
        except AgentError:
            return None

    def close(self) -> None:
        """End the template and everything in its process group (and so in its sandbox)."""
        if self._process.poll() is None:
            assert self._process.stdin is not None
            with contextlib.suppress(OSError):
                self._process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def _write(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
        except (OSError, ValueError) as exc:  # ValueError: the pipe was closed with the template
            raise AgentError(f"the agent template for {self.module} is gone: {exc}") from exc

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line, or None after ``timeout``; AgentError when the template has ended."""
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self._process.wait()
                raise AgentError(f"the agent template for {self.module} ended (exit {code})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message: dict[str, Any] = json.loads(line)
        except ValueError as exc:
            raise AgentError(f"the agent template for {self.module} said {line[:200]!r}") from exc
        return message


class _Lines:
    """JSON lines read from a file descriptor without blocking past what select said is there."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def feed(self) -> None:
        chunk = os.read(self.fd, 65536)
        self.closed = not chunk
        self.buffer += chunk

    def next(self) -> dict[str, Any] | None:
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message


def serve(module: str, requests: int, replies: IO[bytes], *, sweep: bool = False) -> int:
    """The template's loop: import ``module`` (and the other agents), then run one child per request.

    While a child runs, the template waits for it to end or for a ``kill`` request, whichever comes
    first; then it kills what is left of the child's process group and, inside a sandbox (``sweep``),
    every other process of the PID namespace, so nothing an invocation started outlives it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in dict.fromkeys((module, *PRELOAD, *RUNTIME)):
        importlib.import_module(name)
    from orchestrator.agents.mcpclient import tls_context

    tls_context()  # the CA store is loaded once; every child inherits it
    _reply(replies, {"ready": True})
    lines = _Lines(requests)
    while True:
        request = lines.next()
        if request is None:
            if lines.closed:
                return 0
            lines.feed()
            continue
        if "cwd" not in request:
            continue  # a kill for a child that has already ended
        pid = os.fork()
        if pid == 0:
            os._exit(_child(module, request))
        _reply(replies, {"started": True, "pid": pid})
        code = _await(pid, lines)
        _kill_leftovers(pid, sweep=sweep)
        _reply(replies, {"exit": code})


def _await(pid: int, lines: _Lines) -> int:
    """The child's exit code, once it ends by itself or is killed on request (or the runner is gone)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, lines.fd], [], [])
            if pidfd in ready:
                break
            lines.feed()
            request = lines.next()
            if lines.closed or (request is not None and request.get("kill")):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                break
    finally:
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _kill_leftovers(pid: int, *, sweep: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if not sweep:
        return
    keep = {1, os.getpid(), os.getppid()}  # the namespace's init, this template, the relay that started it
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in keep:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _reply(replies: IO[bytes], message: dict[str, Any]) -> None:
    replies.write(json.dumps(message).encode() + b"\n")
    replies.flush()


def _child(module: str, request: dict[str, Any]) -> int:
    """The invocation, inside the forked child: detach, set up like a spawned command, run; its exit code."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(2, 1)  # the agent log; the template's reply pipe is not the agent's to write on
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.argv = [module]
        code = importlib.import_module(module).main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child reports any failure as a traceback and exit code 1
        traceback.print_exc()
        code = 1
    _flush_output()
    return int(code or 0)


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


if __name__ == "__main__":
    code = serve(sys.argv[1], 0, sys.stdout.buffer, sweep=SWEEP in sys.argv[2:])
    _flush_output()
    # Every child has been reaped and nothing is left to finalise: tearing down the interpreter with all the
    # agents' imports would hold the end of the run for about a quarter of a second.
    os._exit(code)
