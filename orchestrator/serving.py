"""Serving an ASGI app on 127.0.0.1 from a background thread: the twin, the tool server, the model proxy."""

from __future__ import annotations

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
) -> LocalServer:
    """Start serving ``app`` on 127.0.0.1:``port`` (0: a free port); raise ``error`` if it does not come up.
    With ``tls`` (certificate and key files, read once the server starts) it serves HTTPS.

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
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise error(f"{name} did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    return LocalServer(server, thread)
