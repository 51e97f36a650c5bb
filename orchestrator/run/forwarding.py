"""Byte relays between TCP on loopback and Unix sockets: how an agent in its own network namespace reaches
the tool server and the model proxy, and nothing else.

The sandbox has a network namespace of its own with only a loopback interface. The runner serves each
endpoint on a Unix socket (``UnixToTcp``, outside the sandbox, relaying to the endpoint's real port), and the
socket's folder is the only thing of the run bound into the sandbox. Inside, this module runs as a small
program (``python -I forwarding.py --tcp PORT=SOCKET ... -- COMMAND ...``) that listens on
``127.0.0.1:PORT`` for each endpoint, relays every connection to its socket, starts the agent's command and
exits with its exit code. So the URLs an agent is given are the same inside and outside the sandbox, and
every other address on the machine is unreachable from it.

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
    """Outside the sandbox: serve ``socket_path`` and relay each connection to ``127.0.0.1:port``."""

    def __init__(self, socket_path: str, port: int) -> None:
        self.socket_path = socket_path
        self.port = port
        self._server = _UnixServer(socket_path, _handler(_tcp_connector(port)))
        os.chmod(socket_path, 0o666)  # the agent's uid connects to it; only the sandbox can see the folder
        self._thread = threading.Thread(target=self._server.serve_forever, name="unix relay", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)


def listen_tcp(port: int, socket_path: str) -> _TcpServer:
    """Inside the sandbox: listen on ``127.0.0.1:port`` and relay each connection to ``socket_path``."""
    server = _TcpServer(("127.0.0.1", port), _handler(_unix_connector(socket_path)))
    threading.Thread(target=server.serve_forever, name=f"relay {port}", daemon=True).start()
    return server


def _parse(argv: Sequence[str]) -> tuple[list[tuple[int, str]], list[str]]:
    if "--" not in argv:
        raise SystemExit("forwarding: usage: --tcp PORT=SOCKET ... -- COMMAND ...")
    split = list(argv).index("--")
    options, command = list(argv[:split]), list(argv[split + 1 :])
    routes: list[tuple[int, str]] = []
    while options:
        flag = options.pop(0)
        if flag != "--tcp" or not options:
            raise SystemExit(f"forwarding: unexpected argument {flag!r}")
        port, _, path = options.pop(0).partition("=")
        routes.append((int(port), path))
    if not command:
        raise SystemExit("forwarding: no command")
    return routes, command


def main(argv: Sequence[str]) -> int:
    """Listen for every route, run the command with our standard streams, and return its exit code."""
    routes, command = _parse(argv)
    for port, path in routes:
        listen_tcp(port, path)
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"forwarding: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
