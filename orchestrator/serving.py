"""Serving an ASGI app on 127.0.0.1 from a background thread: the twin, the tool server, the model proxy."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Literal

import uvicorn

from orchestrator.errors import OrchestratorError


class LocalServer:
    """A uvicorn server running in a daemon thread, bound to loopback."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.port: int = server.servers[0].sockets[0].getsockname()[1]
        self.scheme = "https" if server.config.is_ssl else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def stop_soon(self) -> None:
        """Tell the server to stop, without waiting: uvicorn looks every tenth of a second and then takes a
        tenth more to close its connections, so servers told together stop together."""
        self._server.should_exit = True

    def stop(self, *, timeout_s: float = 30.0) -> None:
        self.stop_soon()
        self._thread.join(timeout=timeout_s)


def serve_locally(
    app: Any,
    *,
    name: str,
    port: int = 0,
    lifespan: Literal["on", "off", "auto"] = "on",
    error: type[OrchestratorError] = OrchestratorError,
    timeout_s: float = 30.0,
    tls: tuple[Path, Path] | None = None,
    unix_socket: Path | None = None,
) -> LocalServer:
    """Start serving ``app`` on 127.0.0.1:``port`` (0: a free port); raise ``error`` if it does not come up.
    With ``tls`` (certificate and key files, read once the server starts) it serves HTTPS. With
    ``unix_socket`` (a path where nothing is yet) it serves there too, to every user of the machine who may
    reach the path: the agent's sandbox connects to it, as another user.

    Waiting for a socket to open is plumbing, not logic, so wall time is used here.
    """
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan=lifespan,
        access_log=False,
        timeout_graceful_shutdown=1,
        ws="wsproto",  # pyproject.toml says why
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = uvicorn.Server(config)
    sockets = None
    if unix_socket is not None:
        try:
            sockets = _bound(port, unix_socket)
        except OSError as exc:
            raise error(f"{name} cannot listen on 127.0.0.1:{port} and {unix_socket}: {exc}") from None
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            for sock in sockets or ():
                sock.close()
            raise error(f"{name} did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    return LocalServer(server, thread)


def _bound(port: int, path: Path) -> list[socket.socket]:
    """A TCP socket bound at 127.0.0.1:``port`` (as uvicorn binds its own), and a Unix stream socket bound
    at ``path`` that everyone who can reach the path may connect to; uvicorn listens on both."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound = False
    try:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", port))
        unix.bind(str(path))
        bound = True
        os.chmod(path, 0o666)
    except OSError:
        tcp.close()
        unix.close()
        if bound:  # the file is this socket's, not one that was there before
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        raise
    return [tcp, unix]
