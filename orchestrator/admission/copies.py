"""Warm twins that a screening process boots once and copies for every entry.

Every entry's timeline begins the same way: the app boots and warms up, and an entry injected straight after
the window before its injection shares that window too. A screening process moves a twin of its app to each
of these states once and forks a copy of itself (``os.fork``) per entry: the copy starts from that state
exactly, serves it over HTTPS with its own Prometheus, screens the entry, and ends with everything the entry
did. Until a copy names its Prometheus the twin holds its scrapes; the copy pushes them first, so its
Prometheus holds the series from simulated time 0 as a twin started for the entry alone would have pushed.
"""

from __future__ import annotations

import gc
import importlib
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Generic, TypeVar

import kubernetes.client

from orchestrator.cluster.client import not_ready_of
from orchestrator.twin.apiserver.certificates import ServingCertificates, issue
from orchestrator.twin.boot import Twin
from orchestrator.twin.launch import RunningTwin, TwinApp, serve_twin
from orchestrator.twin.resources import BY_PLURAL

T = TypeVar("T")
_DEPLOYMENTS = BY_PLURAL[("apps", "deployments")]
_STATEFULSETS = BY_PLURAL[("apps", "statefulsets")]
# A slow start gets up to this many chunks more warm-up; the windows begin once all is ready.
EXTRA_WARMUP_CHUNKS = 4


@dataclass
class Stage:
    """A twin moved to where entries' timelines part, and the CA it published for the copies' servers.

    ``since`` is where the window before injection began when the twin has been through it, else None.
    """

    twin: Twin
    certificates: ServingCertificates
    app: TwinApp  # built once for every copy
    since: float | None = None


def warm_stage(app: str, *, seed: int, warmup_s: float, chunk_s: float) -> Stage:
    """A twin of ``app`` booted and warmed up, its scrapes held. Side effects: none beyond this process."""
    twin = Twin(app, seed=seed, clock="stepped", remote_write_url=None, digest=False)  # nobody reads it
    # As a served twin does before its clock first moves: the CA is in the cluster from the start.
    certificates = issue(now=datetime.now(UTC))  # TLS validity is checked against the wall clock
    twin.cluster.publish_root_ca(certificates.ca_pem.decode())
    twin.telemetry.hold()
    preload()
    twin.advance(warmup_s)
    for _ in range(EXTRA_WARMUP_CHUNKS):
        if not not_ready(twin):
            break
        twin.advance(chunk_s)
    return Stage(twin=twin, certificates=certificates, app=TwinApp.of(twin))


def quiet_stage(app: str, *, seed: int, warmup_s: float, chunk_s: float, window_s: float) -> Stage:
    """A warm twin of ``app`` moved through the window before an injection, which nothing disturbs."""
    stage = warm_stage(app, seed=seed, warmup_s=warmup_s, chunk_s=chunk_s)
    stage.since = stage.twin.now
    stage.twin.advance(window_s)
    return stage


def preload() -> None:
    """Import what each copy would otherwise import for itself: the Kubernetes client's API classes, which
    it loads on first use, and the server of the twin's HTTP app."""
    for name in ("CoreV1Api", "AppsV1Api", "BatchV1Api", "CustomObjectsApi"):
        getattr(kubernetes.client, name)
    importlib.import_module("uvicorn")


def not_ready(twin: Twin) -> list[str]:
    """The workloads of the twin's namespace not fully rolled out and ready, read from its store as the API
    lists them (no side effects)."""
    store = twin.cluster.store
    return not_ready_of(store.list(_DEPLOYMENTS, twin.namespace), store.list(_STATEFULSETS, twin.namespace))


@dataclass
class Copy:
    """A stage's twin served in a copy of the screening process; ``advance`` moves it directly."""

    running: RunningTwin

    @property
    def kubeconfig(self) -> Path:
        return self.running.kubeconfig

    @property
    def now(self) -> float:
        return self.running.twin.now

    def advance(self, seconds: float) -> float:
        """Move the twin ``seconds`` forward (whole steps), its series in Prometheus on return."""
        if seconds <= 0:
            return self.now
        return self.running.advance(seconds)


def serve_copy(stage: Stage, *, kubeconfig: Path, remote_write_url: str) -> Copy:
    """Serve the stage's twin in this (copied) process; its series go to ``remote_write_url``, where the
    held ones are on return, as a twin's are when the advance that scraped them returns."""
    stage.twin.telemetry.send_to(remote_write_url)
    stage.twin.telemetry.flush()
    return Copy(serve_twin(stage.twin, kubeconfig=kubeconfig, certificates=stage.certificates, app=stage.app))


@dataclass(frozen=True)
class _Outcome(Generic[T]):
    value: T | None = None
    crash: str | None = None  # the traceback of the exception that ended the work


def in_copy(work: Callable[[], T]) -> T:
    """``work()`` run in a fork of this process, which ends when it returns; its result (picklable) or its
    exception comes back, as a ``RuntimeError`` with the copy's traceback. Nothing ``work`` changes reaches
    this process, which must run no other thread."""
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the copy's collector leaves the state it starts from alone (and unshared pages unwritten)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the copy; coverage does not follow it
        os.close(read)
        code = 0
        try:
            outcome: _Outcome[T] = _Outcome(value=work())
        except BaseException:
            outcome, code = _Outcome(crash=traceback.format_exc()), 1
        try:
            with os.fdopen(write, "wb") as out:
                pickle.dump(outcome, out)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # no atexit, no finalizers: they belong to the process copied
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        code = os.waitstatus_to_exitcode(status)
        raise RuntimeError(f"the copy {pid} of the screening process died (exit {code}) saying nothing")
    found: _Outcome[T] = pickle.loads(data)
    if found.crash is not None:
        raise RuntimeError(f"the copy {pid} of the screening process failed:\n{found.crash}")
    return found.value  # type: ignore[return-value]
