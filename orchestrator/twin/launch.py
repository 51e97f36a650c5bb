"""Run a twin in this process: its HTTP server on 127.0.0.1 in a thread, a kubeconfig that points at it.

For tests, the runner and ``marathon twin serve``: ``start_twin(...)`` returns a handle with the URL, the
kubeconfig path, ``advance(seconds)`` (stepped clock) and ``stop()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.serving import LocalServer, serve_locally
from orchestrator.twin.boot import Twin
from orchestrator.twin.clock import ClockMode
from orchestrator.twin.kubeconfig import write_kubeconfig

START_TIMEOUT = 30.0


@dataclass
class RunningTwin:
    twin: Twin
    url: str
    kubeconfig: Path
    _served: LocalServer
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
        self._served.stop(timeout_s=START_TIMEOUT)

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
    served = serve_locally(
        twin.build_app(), name=f"the twin's server for {app}", port=port, lifespan="off", error=ConfigError
    )
    path = write_kubeconfig(kubeconfig, server=served.url, namespace=twin.namespace)
    twin.start_clock()
    return RunningTwin(twin=twin, url=served.url, kubeconfig=path, _served=served)
