"""Run a twin in this process: its HTTPS server on 127.0.0.1 in a thread, a kubeconfig that points at it.

For tests, the runner and ``marathon twin serve``: ``start_twin(...)`` returns a handle with the URL, the
kubeconfig path, the credentials an HTTP client needs (also in the kubeconfig: the CA to trust and the
bearer token the server wants), ``advance(seconds)`` (stepped clock) and ``stop()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.catalog.faults import CodeFault
from orchestrator.errors import ConfigError
from orchestrator.serving import LocalServer, serve_locally
from orchestrator.twin.apiserver.certificates import ServingCertificates, issue
from orchestrator.twin.apiserver.kubeconfig import Credentials, new_token, write_kubeconfig
from orchestrator.twin.boot import Twin
from orchestrator.twin.clock import ClockMode

if TYPE_CHECKING:
    from fastapi import FastAPI

START_TIMEOUT = 30.0


@dataclass
class RunningTwin:
    twin: Twin
    url: str
    kubeconfig: Path
    credentials: Credentials = field(repr=False)
    _served: LocalServer = field(repr=False)
    _stopped: bool = field(default=False)

    @property
    def twin_error(self) -> BaseException | None:
        """Why the realtime clock stopped, if it died."""
        return self.twin.clock_error

    def advance(self, seconds: float, *, flush: bool = True) -> float:
        """Move the stepped world forward (the same as ``POST /twin/v1/advance``)."""
        return self.twin.advance(seconds, flush=flush)

    def flush_begin(self) -> Callable[[], None]:
        """Push every series so far; the call returned waits until Prometheus has them."""
        return self.twin.flush_begin()

    def stop(self) -> None:
        """Stop the clock and the server and wait for its thread; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self.twin.stop()
        self._served.stop(timeout_s=START_TIMEOUT)

    def stop_soon(self) -> None:
        """Tell the API server to stop, without waiting (``stop`` waits)."""
        self._served.stop_soon()

    def __enter__(self) -> RunningTwin:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class TwinApp:
    """A twin's HTTP app and the bearer token it wants."""

    app: FastAPI
    token: str

    @classmethod
    def of(cls, twin: Twin) -> TwinApp:
        token = new_token()
        return cls(app=twin.build_app(token=token), token=token)


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
    digest: bool = True,
    root: Path | None = None,
    faults: Iterable[CodeFault] | None = None,
) -> RunningTwin:
    """Boot the twin of ``app``, serve it over HTTPS on 127.0.0.1:``port`` (0: a free port) behind a fresh
    bearer token and write ``kubeconfig`` (owner-only) with that token and the CA to trust. Without
    ``digest``, the twin keeps no digest of its samples (its status tells none)."""
    twin = Twin(
        app,
        seed=seed,
        clock=clock,
        speed=speed,
        remote_write_url=remote_write_url,
        keep_samples=keep_samples,
        digest=digest,
        root=root,
        faults=faults,
    )
    certificates = issue(now=datetime.now(UTC))  # TLS validity is checked against the wall clock
    twin.cluster.publish_root_ca(certificates.ca_pem.decode())
    try:
        return serve_twin(twin, kubeconfig=kubeconfig, certificates=certificates, port=port)
    except BaseException:
        twin.stop()
        raise


def serve_twin(
    twin: Twin,
    *,
    kubeconfig: Path,
    certificates: ServingCertificates,
    port: int = 0,
    app: TwinApp | None = None,
) -> RunningTwin:
    """Serve a booted ``twin`` over HTTPS on 127.0.0.1:``port`` (0: a free port) under ``certificates`` (the
    twin has published their CA) behind a fresh bearer token, write ``kubeconfig`` (owner-only) with that
    token and the CA to trust, and start its clock. ``app`` is the twin's app when built beforehand.
    On failure nothing is left serving; the twin itself is the caller's to stop."""
    app = app if app is not None else TwinApp.of(twin)
    token = app.token
    with certificates.files() as tls:
        served = serve_locally(
            app.app,
            name=f"the twin's server for {twin.app}",
            port=port,
            lifespan="off",
            error=ConfigError,
            tls=tls,
        )
    credentials = Credentials(server=served.url, token=token, ca_pem=certificates.ca_pem)
    try:
        path = write_kubeconfig(kubeconfig, credentials, namespace=twin.namespace)
    except BaseException:
        served.stop(timeout_s=START_TIMEOUT)
        raise
    twin.start_clock()
    return RunningTwin(twin=twin, url=served.url, kubeconfig=path, credentials=credentials, _served=served)
