"""The agent's sandbox: every agent process runs under bubblewrap (Debian's ``bwrap``) in a mount, PID, IPC,
UTS and network namespace of its own, as an unprivileged uid.

What the agent sees:
- ``/workspace``: its persistent workspace, the only writable place besides an empty ``/tmp``;
- ``/run/marathon/inbox/alerts.json``: the cumulative alert history (read-only);
- ``/run/marathon/oracle/truth.json``: the oracle's ground truth, for the oracle agent only;
- the system's programs and libraries (``/usr``, selected files of ``/etc``), the Python interpreter and
  virtualenv the orchestrator runs under, the ``orchestrator`` package (the built-in agents' code), and
  whatever read-only paths the user names (``--agent-path``, and files named by absolute path on the agent's
  command line);
- a ``/proc`` of its own PID namespace, so no process of the orchestrator;
- a network namespace with only loopback, where ``orchestrator.run.forwarding`` listens on the ports of the
  tool server and the model proxy and relays to them through Unix sockets, on which the run's servers
  listen themselves (any other endpoint gets a relay process outside): nothing else on the machine (the
  twin's API, Prometheus, the control plane) is reachable.

Nothing else of the run directory (bundle, ledger, kubeconfig), the catalog or the repository exists in its
view. When the orchestrator runs as root, the agent runs as ``AGENT_UID`` (``setpriv`` drops the uid, groups
and capabilities, with no-new-privs); otherwise a user namespace keeps the caller's own unprivileged uid.

Killing the process group of ``bwrap`` kills the namespace's first process, and with it every process of
the namespace, including any that started a session of its own to escape its group.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orchestrator
from orchestrator.errors import ConfigError, Problem
from orchestrator.run import forwarding
from orchestrator.sandboxing import SYSTEM, drop_privileges, system_binds

WORKSPACE = "/workspace"
RUN = "/run/marathon"
INBOX = f"{RUN}/inbox"
ORACLE = f"{RUN}/oracle"
SOCKETS = f"{RUN}/sockets"
AGENT_UID = 65534  # nobody: used when the orchestrator runs as root
PACKAGE_DIR = Path(orchestrator.__file__).resolve().parent
FORWARDER = Path(forwarding.__file__).resolve()
PROBE_TIMEOUT_S = 30.0
ARGS_PIPE_BYTES = 60_000  # under Linux's 64 KiB pipe buffer


class SandboxUnavailable(ConfigError):
    """The agent sandbox cannot be created on this machine."""


def bwrap_binary() -> str:
    """The path of ``bwrap``; ``SandboxUnavailable`` when it is not installed."""
    found = shutil.which("bwrap")
    if found is None:
        raise _unavailable("bwrap is not installed (Debian package bubblewrap; `make setup` installs it)")
    return found


def _unavailable(why: str) -> SandboxUnavailable:
    message = f"{why}; pass --unsandboxed to run the agent without a sandbox (recorded in the bundle)"
    return SandboxUnavailable(
        "cannot create the agent sandbox", [Problem("run configuration", None, "sandbox", "bwrap", message)]
    )


def _python_paths() -> list[Path]:
    """The interpreter the built-in agents run under, its virtualenv, and the orchestrator package."""
    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent, PACKAGE_DIR]
    return [p.resolve() for p in paths]


def command_paths(command: Sequence[str]) -> list[Path]:
    """The agent's program and the files (not folders) named by absolute path on its command line: a
    script the command runs is visible read-only without a flag (no side effects)."""
    found: list[Path] = []
    program = shutil.which(command[0]) if command else None
    if program is not None:
        found.append(Path(program))
        found.append(Path(program).resolve())
    found += [Path(arg) for arg in command[1:] if arg.startswith("/") and os.path.isfile(arg)]
    return found


def _covered(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


@dataclass
class Sandbox:
    """The sandbox of one run's agent: its layout, and the Unix sockets of its endpoints."""

    workspace: Path
    inbox_dir: Path
    oracle_dir: Path | None = None
    readonly: Sequence[Path] = ()
    uid: int = AGENT_UID
    _relays: list[forwarding.UnixToTcp] = field(default_factory=list, init=False, repr=False)
    _routes: list[tuple[int, str]] = field(default_factory=list, init=False, repr=False)
    _sockets: Path | None = field(default=None, init=False, repr=False)

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    def socket_path(self, name: str) -> Path:
        """A path in the folder of sockets the sandbox sees, for a server of the run to listen on itself:
        ``open`` then routes its URL there, and no relay stands between the agent and that server."""
        return self._folder() / f"{name}.sock"

    def _folder(self) -> Path:
        if self._sockets is None:
            # A short folder of its own: Unix socket paths are limited to about a hundred bytes.
            self._sockets = Path(tempfile.mkdtemp(prefix="marathon-sockets-"))
            self._sockets.chmod(0o755)
        return self._sockets

    def open(self, urls: Iterable[str], *, served: Mapping[str, Path] | None = None) -> None:
        """Prepare the workspace and inbox and route the port of each endpoint URL: to the socket its
        server listens on itself when ``served`` names one for the URL (a ``socket_path``), else to a
        relay started for it."""
        for folder in (self.workspace, self.inbox_dir):
            folder.mkdir(parents=True, exist_ok=True)
        if self.as_root:
            _chown_tree(self.workspace, self.uid)
        sockets = self._folder()
        for url in urls:
            port = urlsplit(url).port
            if port is None or any(port == p for p, _ in self._routes):
                continue
            own = (served or {}).get(url)
            if own is not None:
                if own.parent != sockets:
                    raise ValueError(f"{own} is not in the sandbox's folder of sockets ({sockets})")
                self._routes.append((port, f"{SOCKETS}/{own.name}"))
                continue
            name = f"{port}.sock"
            self._relays.append(forwarding.UnixToTcp(str(sockets / name), port))
            self._routes.append((port, f"{SOCKETS}/{name}"))

    def close(self) -> None:
        for relay in self._relays:
            relay.close()
        self._relays.clear()
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None

    def inside(self, path: Path) -> str:
        """Where a host path of the workspace, the inbox or the oracle's folder is seen in the sandbox."""
        for host, seen in ((self.workspace, WORKSPACE), (self.inbox_dir, INBOX), (self.oracle_dir, ORACLE)):
            if host is not None and (path == host or host in path.parents):
                return str(Path(seen) / path.relative_to(host))
        raise ValueError(f"{path} is not visible in the sandbox")

    def start(self, command: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
        """Start ``command`` in the sandbox (``popen``: the rest of ``subprocess.Popen``'s arguments).

        bwrap reads its arguments from a pipe, so the sandbox's first process shows ``bwrap --args N`` in
        ``/proc/1/cmdline``, not the host paths of the run it binds."""
        argv = self.argv(command)
        split = argv.index("--")  # bwrap takes options from the pipe; what it runs stays on its command line
        data = b"".join(arg.encode() + b"\0" for arg in argv[1:split])
        if len(data) > ARGS_PIPE_BYTES:  # would not fit the pipe before bwrap reads it
            return subprocess.Popen(argv, **popen)
        read, write = os.pipe()
        try:
            os.write(write, data)
        finally:
            os.close(write)
        try:
            return subprocess.Popen([argv[0], "--args", str(read), *argv[split:]], pass_fds=(read,), **popen)
        finally:
            os.close(read)

    def argv(self, command: Sequence[str]) -> list[str]:
        """``bwrap`` and its arguments, the relays and the privilege drop, then ``command`` (no side
        effects)."""
        args = [bwrap_binary(), "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--hostname", "sandbox",
                "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]  # fmt: skip
        if not self.as_root:
            args.append("--unshare-user")
        args += system_binds()
        binds: list[tuple[str, str, str]] = []
        bound: list[Path] = []
        for path in [*_python_paths(), *self.readonly, *command_paths(command)]:
            if path.exists() and not _covered(path, bound) and not _covered(path, [Path(p) for p in SYSTEM]):
                binds.append(("--ro-bind", str(path), str(path)))
                bound.append(path)
        binds += [("--bind", str(self.workspace), WORKSPACE), ("--ro-bind", str(self.inbox_dir), INBOX)]
        if self.oracle_dir is not None:
            self.oracle_dir.mkdir(parents=True, exist_ok=True)
            binds.append(("--ro-bind", str(self.oracle_dir), ORACLE))
        if self._sockets is not None:
            binds.append(("--ro-bind", str(self._sockets), SOCKETS))
        made: set[str] = set()
        for option, source, target in binds:
            args += _parents(target, made)
            args += [option, source, target]
        args += ["--chdir", WORKSPACE, "--"]
        if self.as_root:
            args += drop_privileges(self.uid)
        args += [sys.executable, "-I", "-S", str(FORWARDER)]
        for port, socket in self._routes:
            args += ["--tcp", f"{port}={socket}"]
        return [*args, "--", *command]


def _parents(target: str, made: set[str]) -> list[str]:
    """Folders leading to a mount point, traversable by everyone (bwrap would make them private)."""
    args: list[str] = []
    for parent in reversed(Path(target).parents):
        name = str(parent)
        if name in ("/", "/tmp") or name in made:
            continue
        made.add(name)
        args += ["--perms", "0755", "--dir", name]
    return args


def _chown_tree(root: Path, uid: int) -> None:
    """Give the agent's uid its workspace (it was written by earlier invocations or the orchestrator)."""
    os.chown(root, uid, uid)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), uid, uid)


def probe(scratch: Path) -> None:
    """Start a sandbox that runs ``true``; ``SandboxUnavailable`` with bwrap's own words if it fails."""
    sandbox = Sandbox(workspace=scratch / "workspace", inbox_dir=scratch / "inbox")
    sandbox.open(())
    try:
        process = sandbox.start(
            ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _, stderr = process.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise _unavailable("bwrap did not finish a trial run") from None
    except OSError as exc:
        raise _unavailable(f"bwrap could not be started: {exc}") from None
    finally:
        sandbox.close()
    if process.returncode != 0:
        said = (stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise _unavailable(f"bwrap failed on this machine ({said})")
