"""Byte relays between TCP on loopback and Unix sockets: how an agent in its own network namespace reaches
the tool server and the model proxy, and nothing else.

The sandbox has a network namespace of its own with only a loopback interface. Each endpoint is served on a
Unix socket: the run's tool server and model proxy listen on one themselves, and any other endpoint gets a
relay (``UnixToTcp``, outside the sandbox, relaying to the endpoint's real port). The sockets' folder is the
only thing of the run bound into the sandbox. Inside, this module runs as a small
program (``python -I forwarding.py --tcp PORT=SOCKET ... -- COMMAND ...``) that listens on
``127.0.0.1:PORT`` for each endpoint, relays every connection to its socket, starts the agent's command and
exits with its exit code. So the URLs an agent is given are the same inside and outside the sandbox, and
every other address on the machine is unreachable from it. Outside, the same program with
``--unix SOCKET=PORT`` and no command is the relay from the socket to the endpoint.

The module uses the standard library only: inside the sandbox it runs before, and apart from, the
orchestrator's own imports.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

CHUNK = 65536


def relay(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways between two connected sockets until both directions are closed."""
    for s in (a, b):
        if s.family == socket.AF_INET:
            # A request or answer arrives in pieces; without this, Nagle's algorithm holds each later
            # piece until the peer's delayed acknowledgement of the first, some 40 ms a time.
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    back = threading.Thread(target=pump, args=(b, a), daemon=True)
    back.start()
    pump(a, b)
    back.join()
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.close()


def _handler(connect: Callable[[], socket.socket]) -> type[socketserver.BaseRequestHandler]:
    class Relay(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                upstream = connect()
            except OSError:
                return
            relay(self.request, upstream)

    return Relay


class _Threading(socketserver.ThreadingMixIn):
    daemon_threads = True
    block_on_close = False


class _TcpServer(_Threading, socketserver.TCPServer):
    allow_reuse_address = True


class _UnixServer(_Threading, socketserver.UnixStreamServer):
    pass


def _unix_connector(path: str) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return s

    return connect


def _tcp_connector(port: int) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        return socket.create_connection(("127.0.0.1", port))

    return connect


class UnixToTcp:
    """Outside the sandbox: serve ``socket_path`` and relay each connection to ``127.0.0.1:port``.

    The relay is a process of its own (this module with ``--unix``), not a thread of the runner, whose
    interpreter is busy serving the tools: a thread would wait for the runner's lock on every chunk."""

    def __init__(self, socket_path: str, port: int) -> None:
        self.socket_path = socket_path
        self.port = port
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), "--unix", f"{socket_path}={port}"],
            stdin=subprocess.PIPE,  # never written: closed when the runner exits, which ends the relay
            stdout=subprocess.PIPE,
        )
        assert self._process.stdout is not None
        ready = self._process.stdout.readline()  # the relay says so once its socket listens
        if ready.strip() != b"listening":
            self.close()
            raise OSError(f"the relay for port {port} did not start")

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                stream.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)


def listen_unix(socket_path: str, port: int) -> _UnixServer:
    """Outside the sandbox: listen on ``socket_path`` and relay each connection to ``127.0.0.1:port``."""
    server = _UnixServer(socket_path, _handler(_tcp_connector(port)))
    os.chmod(socket_path, 0o666)  # the agent's uid connects to it; only the sandbox can see the folder
    threading.Thread(target=server.serve_forever, name=f"relay {socket_path}", daemon=True).start()
    return server


def listen_tcp(port: int, socket_path: str) -> _TcpServer:
    """Inside the sandbox: listen on ``127.0.0.1:port`` and relay each connection to ``socket_path``."""
    server = _TcpServer(("127.0.0.1", port), _handler(_unix_connector(socket_path)))
    threading.Thread(target=server.serve_forever, name=f"relay {port}", daemon=True).start()
    return server


def _parse(argv: Sequence[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    split = list(argv).index("--") if "--" in argv else len(argv)
    options, command = list(argv[:split]), list(argv[split + 1 :])
    routes: list[tuple[str, str, str]] = []
    while options:
        flag = options.pop(0)
        if flag not in ("--tcp", "--unix") or not options:
            raise SystemExit(f"forwarding: unexpected argument {flag!r}")
        listen, _, target = options.pop(0).partition("=")
        routes.append((flag, listen, target))
    return routes, command


def main(argv: Sequence[str]) -> int:
    """Listen for every route; then run the command with our standard streams and return its exit code,
    or, with no command, relay until killed or until the runner that started it exits."""
    routes, command = _parse(argv)
    for flag, listen, target in routes:
        if flag == "--tcp":
            listen_tcp(int(listen), target)
        else:
            listen_unix(listen, int(target))
    if not command:
        print("listening", flush=True)
        # Standard input is a pipe from the runner: its end of file is the runner's exit, however it ended
        # (kill -9 included), and the relay goes with it rather than outlive the run.
        sys.stdin.buffer.read()
        return 0
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"forwarding: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
