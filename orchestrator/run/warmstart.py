"""Warm starts for the built-in Python agents: each invocation is forked from a template process that has
already imported them, instead of starting an interpreter and importing the `mcp` SDK again, which costs
most of a second of CPU per invocation.

The template (``python -m orchestrator.run.warmstart``) belongs to one run's ``AgentProcess``. It imports the
agent modules, then serves one request at a time over its stdin and stdout, one JSON line each way: it forks,
answers with the child's pid, waits for the child and answers with its exit code. It only imported modules
and never runs agent code itself, so every child is as fresh as a spawned process, and the child then does
what a spawned command would have had done for it: a new session and process group, the workspace as
working directory, exactly the protocol environment, stdin from /dev/null, stdout and stderr appended to the
agent log. The template ends when its stdin closes, so it never outlives the run that started it.
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
from pathlib import Path
from typing import IO, Any

from orchestrator.agents import AGENT_NAMES
from orchestrator.errors import AgentError

AGENTS_PACKAGE = "orchestrator.agents."
PRELOAD = tuple(AGENTS_PACKAGE + name for name in AGENT_NAMES)
READY_TIMEOUT_S = 60.0


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

    def __init__(self, module: str, *, env: Mapping[str, str], python: str | None = None) -> None:
        """``env`` is the template's own environment: the allow-listed part of ours, so that nothing of the
        orchestrator's (an upstream model key, say) is in the process the agents are forked from."""
        self.module = module
        self._process = subprocess.Popen(
            [python or sys.executable, "-m", "orchestrator.run.warmstart", module],
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a terminal's Ctrl-C is the runner's to handle, not the template's
        )
        self._buffer = b""
        if self._read(READY_TIMEOUT_S) is None:  # {"ready": true} once the imports are done
            self._process.kill()
            self.close()
            raise AgentError(f"the agent template for {module} was not ready within {READY_TIMEOUT_S:.0f} s")

    def fork(self, *, workspace: Path, env: Mapping[str, str], log_path: Path) -> int:
        """Start one invocation; the pid of its process (also its process group and session)."""
        request = {"cwd": str(workspace), "env": dict(env), "log": str(log_path)}
        self._write(request)
        reply = self._read(READY_TIMEOUT_S)
        if reply is None or not isinstance(reply.get("pid"), int):
            raise AgentError(f"the agent template for {self.module} did not start the invocation: {reply!r}")
        return int(reply["pid"])

    def wait(self, timeout: float) -> int | None:
        """The exit code once the invocation's process has ended, or None after ``timeout`` seconds."""
        reply = self._read(timeout)
        if reply is None:
            return None
        return int(reply.get("exit", -1))

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            with contextlib.suppress(OSError):
                self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def _write(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
        except OSError as exc:
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
        message: dict[str, Any] = json.loads(line)
        return message


def serve(module: str, requests: IO[bytes], replies: IO[bytes]) -> int:
    """The template's loop: import ``module`` (and the other agents), then fork one child per request."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in dict.fromkeys((module, *PRELOAD)):
        importlib.import_module(name)
    _reply(replies, {"ready": True})
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(_child(module, request))
        _reply(replies, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply(replies, {"exit": os.waitstatus_to_exitcode(status)})
    return 0


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
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((null, 0), (log, 1), (log, 2)):
            os.dup2(source, target)
        os.close(log)
        os.close(null)
        sys.argv = [module]
        code = importlib.import_module(module).main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child reports any failure as a traceback and exit code 1
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer))
