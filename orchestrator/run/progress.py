"""The live progress line of a run on the terminal: invocation k/K, active faults, firing alerts, elapsed."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RunProgress:
    """A rich progress bar on stderr fed by the runner's progress dicts; nothing at all when ``quiet``."""

    def __init__(self, *, quiet: bool, title: str) -> None:
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: Any = None
        self._title = title

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
            self._task = self._progress.add_task(self._title, total=None, status="starting")
        return self

    def __call__(self, state: dict[str, Any]) -> None:
        if self._progress is None:
            return
        status = (
            f"t={state['t'] / 60:.0f} min  faults active {state['active']}  alerts firing {state['firing']}"
        )
        self._progress.update(
            self._task, completed=state["k"], total=state["of"], status=status, description=self._title
        )

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
