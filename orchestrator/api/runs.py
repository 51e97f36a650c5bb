"""Starting, following and stopping runs: each run in its own worker process, its events read back on a
thread that keeps the registry, the metrics and the live event log up to date.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from orchestrator.api.events import EventLog, ServiceTail
from orchestrator.api.metrics import Metrics
from orchestrator.api.models import RunRequest
from orchestrator.api.recovery import RUN_DIR, owned_elsewhere, recover_run
from orchestrator.api.registry import IdTaken, Registry, RunRow
from orchestrator.api.tally import RowTally, end_updates
from orchestrator.api.workers import Worker, start_worker
from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ClusterError, ConfigError, Problem
from orchestrator.run.config import RunConfig, make_config
from orchestrator.run.events import (
    Concurrency,
    Finished,
    Interrupted,
    RunEvent,
    Started,
    Stopping,
)
from orchestrator.run.finishing import BUNDLE_DIR
from orchestrator.run.plan import make_plan
from orchestrator.run.runner import identity_of, preflight
from orchestrator.schedule_commands import NO_CAP

POLL_S = 0.5
IDENTITY_TIMEOUT_S = 10.0
TARGET_LIMIT = 512  # the registry's target column
SCHEDULE_FIELDS = {
    "faults": "faults", "delta_s": "delta_s", "budget_s": "budget_s",
    "injection_period_s": "injection_period_s", "observation_period_s": "observation_period_s",
    "min_duration_s": "min_duration_s", "max_duration_s": "max_duration_s",
    "max_concurrent": "max_concurrent", "sample_step_s": "sample_step_s",
    "exclusive_culprits": "exclusive_culprits", "decoys": "decoys",
}  # fmt: skip


class TooManyRuns(Exception):
    """The server already runs as many marathons as it was allowed."""


def wall_now() -> str:
    """Registry bookkeeping only (created/ended stamps); never read by a run's logic."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def config_for(request: RunRequest, *, home: Path, runs_root: Path) -> RunConfig:
    """The runner's configuration of an API request; ``ConfigError`` names every bad field (no side
    effects: the run directory is only named here)."""
    overrides = request.schedule.model_dump(exclude_none=True)
    if overrides.get("max_concurrent") == NO_CAP:
        overrides["max_concurrent"] = None  # given as None, the runner's configuration has no cap
    return make_config(
        app=request.app, seed=request.seed, agent=request.agent, backend=request.backend, clock=request.clock,
        speed=request.speed, kubeconfig=Path(request.kubeconfig) if request.kubeconfig else None,
        prometheus_url=request.prometheus_url, baseline=request.baseline, model_url=request.model_url,
        token_budget=request.token_budget, out=home / RUN_DIR, runs_root=runs_root, quiet=True, **overrides,
    )  # fmt: skip


def request_field(problem_field: str) -> list[str]:
    """Where a runner configuration field sits in the request body (for 422 locations)."""
    head = problem_field.split(".")[0]
    head = {"fault_count": "faults"}.get(head, head)  # the schedule planner's name of the field
    if head in SCHEDULE_FIELDS:
        return ["body", "schedule", head]
    return ["body", head]


def kube_target(*, server: str, uid: str) -> str:
    """The registry's name of a real cluster (no side effects): its API server's URL and its kube-system
    namespace's uid. Every copy of a kubeconfig names the cluster it reaches, not the file; a cluster
    re-created behind the same URL is another one."""
    parts = urlsplit(server.strip())
    url = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))
    name = f"kube:{uid}@{url}"
    if len(name) <= TARGET_LIMIT:
        return name
    return f"kube:{uid}@sha256:{hashlib.sha256(url.encode()).hexdigest()}"


def cluster_target(kubeconfig: Path) -> str:
    """Ask the cluster ``kubeconfig`` reaches who it is; ``ConfigError`` on the request's kubeconfig field
    when it cannot tell."""
    try:
        client = KubeClient.from_kubeconfig(kubeconfig)
        try:
            return kube_target(server=client.server, uid=client.system_uid(timeout_s=IDENTITY_TIMEOUT_S))
        finally:
            client.close()
    except ClusterError as exc:
        problem = Problem("request", None, "kubeconfig", str(kubeconfig), f"cannot tell which cluster: {exc}")
        raise ConfigError("the kubeconfig's cluster cannot be identified", [problem]) from exc


def cluster_of(config: RunConfig) -> str | None:
    """The real cluster a run mutates, by its identity (asked of it); None on the twin (each run has its
    own, ``twin:<run id>``)."""
    if config.backend == "kube" and config.kubeconfig is not None:
        return cluster_target(config.kubeconfig)
    return None


def row_fields(
    config: RunConfig, *, run_id: str, home: Path, source: str, target: str | None
) -> dict[str, Any]:
    """A new registry row of ``config``; ``target`` is a real cluster's (``cluster_of``), None on the twin."""
    return {
        "id": run_id, "app": config.app, "seed": config.seed, "agent": config.agent_name,
        "backend": config.backend, "clock": config.clock, "target": target or f"twin:{run_id}",
        "source": source, "config_json": config.model_dump(mode="json"), "home": home,
        "created_at": wall_now(), "owner_pid": os.getpid(),
    }  # fmt: skip


def claim(
    registry: Registry, *, base: str, homes: Path, fields: Callable[[str, Path], dict[str, Any]]
) -> RunRow:
    """Register a run as ``base`` (its bundle's run id), or ``base-2``, ``base-3``... when that id is taken
    (a repeat of a reproducible run has the same identity), and make its home ``homes/<id>``. ``fields``
    gives the row of an id and home; ``TargetBusy`` when a run is active on its cluster."""
    for n in itertools.count(1):
        run_id = base if n == 1 else f"{base}-{n}"
        home = homes / run_id
        if registry.get(run_id) is not None:
            continue
        try:
            home.mkdir(parents=True)
        except FileExistsError:
            continue  # a home left by a run of an older registry, or by another process just now
        try:
            return registry.create(fields=fields(run_id, home))
        except IdTaken:
            home.rmdir()
        except BaseException:
            home.rmdir()
            raise
    raise AssertionError("unreachable")


@dataclass
class Live:
    """What the server holds of a run while its worker is alive."""

    row: RunRow
    worker: Worker
    log: EventLog
    tail: ServiceTail
    tally: RowTally = field(default_factory=RowTally)
    done: threading.Event = field(default_factory=threading.Event)


class RunManager:
    def __init__(self, *, registry: Registry, metrics: Metrics, data_dir: Path, max_active: int) -> None:
        self.registry = registry
        self.metrics = metrics
        self.data_dir = data_dir
        self.max_active = max_active
        self.live: dict[str, Live] = {}
        self._logs: dict[str, EventLog] = {}
        self._lock = threading.Lock()
        self._status = threading.Lock()  # serialises a run's stop with the recording of its end
        self.listeners: list[Callable[[RunRow], None]] = []
        self.closing = False

    @property
    def runs_root(self) -> Path:
        return self.data_dir / "runs"

    def recover(self) -> list[RunRow]:
        """Mark the runs a dead server left active as interrupted, and revert or settle their faults."""
        recovered = []
        for row in self.registry.active():
            if owned_elsewhere(row.owner_pid):
                continue  # another live server or nightly process follows it
            outcome = recover_run(row.home, backend=row.backend, worker_pid=row.worker_pid)
            self.registry.update(
                row.id, status="interrupted", ended_at=wall_now(), reason="interrupted",
                recovery=outcome.summary(), active_faults=[],
            )  # fmt: skip
            EventLog.load(row.home, closed=False).append(Interrupted(recovery=outcome.summary()))
            found = self.registry.get(row.id)
            assert found is not None
            recovered.append(found)
        return recovered

    def submit(self, request: RunRequest, *, source: str = "api") -> RunRow:
        """Validate, register and start a run; ``ConfigError``, ``TargetBusy`` or ``TooManyRuns``."""
        config = config_for(request, home=self.runs_root, runs_root=self.runs_root)
        command = preflight(config)
        plan = make_plan(config)  # catalog and schedule problems are the request's, answered before any start
        config = config.model_copy(update={"run_id": identity_of(config, command=command, plan=plan)})
        cluster = cluster_of(config)
        with self._lock:
            if self.closing:
                raise TooManyRuns("the server is shutting down")
            if sum(1 for live in self.live.values() if not live.done.is_set()) >= self.max_active:
                raise TooManyRuns(f"{self.max_active} runs are active; stop one or wait")

            def fields(run_id: str, home: Path) -> dict[str, Any]:
                nonlocal config
                config = config.model_copy(update={"out": home / RUN_DIR})
                return row_fields(config, run_id=run_id, home=home, source=source, target=cluster)

            row = claim(self.registry, base=config.run_id or "", homes=self.runs_root, fields=fields)
            run_id, home = row.id, row.home
            log = EventLog(home=home)
            worker = start_worker(config.model_dump_json(), log_path=home / "worker.log")
            live = Live(row=row, worker=worker, log=log,
                        tail=ServiceTail(home / RUN_DIR / BUNDLE_DIR / "service.jsonl"))  # fmt: skip
            self.live[run_id] = live
            self._logs[run_id] = log
        self.registry.update(run_id, status="running", worker_pid=worker.pid)
        log.append(Started(app=config.app, agent=config.agent_name, seed=config.seed))
        threading.Thread(target=self._follow, args=(live,), daemon=True, name=f"run-{run_id}").start()
        found = self.registry.get(run_id)
        assert found is not None
        return found

    def stop(self, run_id: str) -> RunRow | None:
        """Ask a run to end gracefully (revert, seal, score); a run already ending or ended is left be."""
        with self._status:  # never "stopping" after the run's end was recorded
            row = self.registry.get(run_id)
            if row is None:
                return None
            live = self.live.get(run_id)
            if live is not None and row.status in ("queued", "running"):
                self.registry.update(run_id, status="stopping")
                live.log.append(Stopping())
                live.worker.stop()
        return self.registry.get(run_id)

    def wait(self, run_id: str, timeout: float | None = None) -> bool:
        live = self.live.get(run_id)
        return True if live is None else live.done.wait(timeout)

    def events(self, row: RunRow) -> EventLog:
        """The run's event log: the live one this process appends to, or what its file holds. A run that
        another process follows (a ``nightly --once`` sharing the registry) is read afresh each time."""
        with self._lock:
            log = self._logs.get(row.id)
            if log is None:
                log = EventLog.load(row.home, closed=not row.active)
                if not row.active:
                    self._logs[row.id] = log
            return log

    def follows(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._logs

    def shutdown(self, *, timeout: float = 120.0) -> None:
        """Stop every run gracefully and wait for them (the server is going down on purpose)."""
        with self._lock:
            self.closing = True
        for run_id in list(self.live):
            self.stop(run_id)
        for live in list(self.live.values()):
            if not live.done.wait(timeout):
                live.worker.process.kill()

    # The worker's messages, on the run's own thread.

    def _follow(self, live: Live) -> None:
        outcome: tuple[str, Any] | None = None
        conn = live.worker.conn
        try:
            while outcome is None:
                if not conn.poll(POLL_S):
                    if not live.worker.process.is_alive() and not conn.poll(0):
                        break
                    continue
                kind, payload = conn.recv()
                if kind == "event":
                    self._on_event(live, payload)
                else:
                    outcome = (kind, payload)
        except (EOFError, OSError):
            pass
        live.worker.process.join(timeout=30)
        conn.close()
        self._finish(live, outcome)

    def _on_event(self, live: Live, event: RunEvent) -> None:
        row = live.row
        updates = live.tally.updates(event)
        live.log.append(event)
        self.metrics.observe(app=row.app, agent=row.agent, event=event)
        if isinstance(event, Concurrency):
            for sample in live.tail.new_samples():
                live.log.append(sample)
        if updates:
            self.registry.update(row.id, **updates)

    def _finish(self, live: Live, outcome: tuple[str, Any] | None) -> None:
        row = live.row
        recovery = None
        if outcome is None:  # the runner reverts in its ``finally``; a worker that died silently could not
            recovery = recover_run(row.home, backend=row.backend, worker_pid=None).summary()
        with self._status:
            status = self._record_end(live, outcome, recovery=recovery)
        live.log.append(Finished(status=status))
        live.log.close()
        live.done.set()
        with self._lock:
            self.live.pop(row.id, None)
        ended = self.registry.get(row.id)
        if ended is not None:
            for listener in self.listeners:
                listener(ended)

    def _record_end(self, live: Live, outcome: tuple[str, Any] | None, *, recovery: str | None) -> str:
        status, updates = end_updates(outcome, live.tally)
        if status == "failed":
            updates["recovery"] = recovery
        self.registry.update(live.row.id, ended_at=wall_now(), **updates)
        return status


def config_problems(problems: list[Problem], message: str) -> list[dict[str, Any]]:
    """FastAPI-shaped 422 details from the runner's configuration problems (no side effects)."""
    problems = problems or [Problem("request", None, "body", "", message)]
    return [
        {"loc": request_field(p.field), "msg": p.message, "type": "value_error", "input": p.value}
        for p in problems
    ]
