"""The live progress line of a run on the terminal: its phase until the first boundary, then invocation k/K,
active faults, firing alerts, elapsed; its phase again once the boundaries are done."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from orchestrator.run.events import Boundary, Concurrency, Phase, RunEvent


class RunProgress:
    """A rich progress bar on stderr that follows the run's events; nothing at all when ``quiet``."""

    def __init__(self, *, quiet: bool, title: str) -> None:
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: Any = None
        self._title = title
        self._concurrency = Concurrency(t=0.0, active=0, firing=0)

    def __enter__(self) -> RunProgress:
        if not self.quiet:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._title, total=None, status="planning")
        return self

    def handle(self, event: RunEvent) -> None:
        """A boundary moves the bar; the counts are those of its concurrency event, which came before it."""
        if isinstance(event, Concurrency):
            self._concurrency = event
        if self._progress is not None and isinstance(event, Phase):
            self._progress.update(self._task, status=event.name)
        if self._progress is None or not isinstance(event, Boundary):
            return
        now = self._concurrency
        status = f"t={event.t / 60:.0f} min  faults active {now.active}  alerts firing {now.firing}"
        self._progress.update(
            self._task, completed=event.k, total=event.of, status=status, description=self._title
        )

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
