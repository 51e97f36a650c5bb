"""Run a twin in this process: its HTTP server on 127.0.0.1 in a thread, a kubeconfig that points at it.

For tests, the runner and ``marathon twin serve``: ``start_twin(...)`` returns a handle with the URL, the
kubeconfig path, ``advance(seconds)`` (stepped clock) and ``stop()``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from orchestrator.errors import ConfigError
from orchestrator.twin.boot import Twin
from orchestrator.twin.clock import ClockMode
from orchestrator.twin.kubeconfig import write_kubeconfig

START_TIMEOUT = 30.0


@dataclass
class RunningTwin:
    twin: Twin
    url: str
    kubeconfig: Path
    _server: uvicorn.Server
    _thread: threading.Thread
    _stopped: bool = field(default=False)

    @property
    def twin_error(self) -> BaseException | None:
        """Why the realtime clock stopped, if it died."""
        return self.twin.clock_error

    def advance(self, seconds: float) -> float:
        """Move the stepped world forward (the same as ``POST /twin/v1/advance``)."""
        return self.twin.advance(seconds)

    def stop(self) -> None:
        """Stop the clock and the server and wait for its thread; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self.twin.stop()
        self._server.should_exit = True
        self._thread.join(timeout=START_TIMEOUT)

    def __enter__(self) -> RunningTwin:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start_twin(
    app: str,
    *,
    seed: int,
    kubeconfig: Path,
    clock: ClockMode = "stepped",
    speed: float = 1.0,
    remote_write_url: str | None = None,
    port: int = 0,
    keep_samples: bool = False,
    root: Path | None = None,
) -> RunningTwin:
    """Boot the twin of ``app``, serve it on 127.0.0.1:``port`` (0: a free port) and write ``kubeconfig``."""
    twin = Twin(
        app,
        seed=seed,
        clock=clock,
        speed=speed,
        remote_write_url=remote_write_url,
        keep_samples=keep_samples,
        root=root,
    )
    config = uvicorn.Config(
        twin.build_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"twin-{app}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"the twin's server for {app!r} did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{bound}"
    path = write_kubeconfig(kubeconfig, server=url, namespace=twin.namespace)
    twin.start_clock()
    return RunningTwin(twin=twin, url=url, kubeconfig=path, _server=server, _thread=thread)
