"""A run started from the command line, recorded in the control plane's registry as it goes: registered when
the runner names it (before anything is written), its progress and counts kept like those of a run the
server drives, its events in an event log the dashboard can follow, its end and score recorded at the end.

The run's home in the registry's data directory holds that event log and a link, ``run``, to the run's own
directory, so the bundle, report and recovery of a command-line run are found where the server finds those
of its own runs. A registry that fails mid-run is warned about once; the run goes on unrecorded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from orchestrator.api.events import EventLog, ServiceTail
from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import Registry, TargetBusy
from orchestrator.api.runs import claim, cluster_of, row_fields, wall_now
from orchestrator.api.tally import RowTally, end_updates
from orchestrator.errors import ConfigError, Problem
from orchestrator.run.config import RunConfig
from orchestrator.run.events import (
    Concurrency,
    Event,
    Finished,
    Identified,
    RunEvent,
    RunEventHandler,
    Started,
)
from orchestrator.run.finishing import BUNDLE_DIR
from orchestrator.run.runner import RunResult

SOURCE = "cli"


class CliRecorder:
    def __init__(self, registry: Registry, *, data_dir: Path, config: RunConfig) -> None:
        self.registry = registry
        self.homes = data_dir / "runs"
        self.config = config
        self.run_id: str | None = None
        self.log: EventLog | None = None
        self.tail: ServiceTail | None = None
        self.tally = RowTally()
        self.broken = False

    @property
    def registry_url(self) -> str:
        return self.registry.engine.url.render_as_string(hide_password=True)

    def following(self, inner: RunEventHandler) -> RunEventHandler:
        """A handler that gives each event to ``inner`` (the progress bar), then records it."""
        recorder = self

        class Both:
            def handle(self, event: RunEvent) -> None:
                inner.handle(event)
                recorder.handle(event)

        return Both()

    def handle(self, event: RunEvent) -> None:
        if isinstance(event, Identified):
            self._register(event)  # a cluster busy with another run refuses this one before it starts
            return
        if self.run_id is None or self.log is None or self.broken:
            return
        updates = self.tally.updates(event)
        self._append(event)
        if isinstance(event, Concurrency) and self.tail is not None:
            for sample in self.tail.new_samples():  # the entry point's error ratio, for the dashboard
                self._append(sample)
        if updates:
            self._update(**updates)

    def finished(self, result: RunResult) -> None:
        outcome = ("result", {"reason": result.reason, "score": result.score, "run_id": result.run_id})
        self._end(outcome)

    def failed(self, error: BaseException) -> None:
        interrupted = isinstance(error, KeyboardInterrupt)
        self._end(("error", "interrupted" if interrupted else str(error) or type(error).__name__))

    def _register(self, event: Identified) -> None:
        config = self.config
        target = cluster_of(config)
        run_dir = Path(event.run_dir)

        def fields(run_id: str, home: Path) -> dict[str, Any]:
            document = config.model_copy(update={"out": run_dir})
            return row_fields(document, run_id=run_id, home=home, source=SOURCE, target=target)

        try:
            row = claim(self.registry, base=run_dir.name, homes=self.homes, fields=fields)
        except TargetBusy as exc:
            problem = Problem("command line", None, "--kubeconfig", str(config.kubeconfig),
                              f"run {exc.run_id} is active on that cluster")  # fmt: skip
            raise ConfigError("the cluster is busy", [problem]) from None
        except (SQLAlchemyError, OSError) as exc:
            self._warn(exc)
            return
        (row.home / RUN_DIR).symlink_to(run_dir, target_is_directory=True)
        self.run_id = row.id
        self.log = EventLog(home=row.home)
        self.tail = ServiceTail(run_dir / BUNDLE_DIR / "service.jsonl")
        self._update(status="running", worker_pid=os.getpid())
        self._append(Started(app=config.app, agent=config.agent_name, seed=config.seed))

    def _end(self, outcome: tuple[str, Any]) -> None:
        if self.run_id is None or self.broken:
            return
        status, updates = end_updates(outcome, self.tally)
        self._update(ended_at=wall_now(), **updates)
        self._append(Finished(status=status))
        if self.log is not None:
            self.log.close()

    def _update(self, **values: Any) -> None:
        if self.run_id is None:
            return
        run_id = self.run_id
        self._write(lambda: self.registry.update(run_id, **values))

    def _append(self, event: Event) -> None:
        log = self.log
        if log is not None:
            self._write(lambda: log.append(event))

    def _write(self, action: Callable[[], object]) -> None:
        if self.broken:
            return
        try:
            action()
        except (SQLAlchemyError, OSError) as exc:
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        self.broken = True
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"marathon: the run goes on unrecorded: registry {self.registry_url}: {first}", file=sys.stderr)
