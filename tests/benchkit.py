"""What a ``tests/bench_*.py`` module may return as a row: a ``Figure`` (a number with its unit and limit, so
that ``make bench`` can judge it and compare it with the saved baseline), or the older plain row of three
strings (what, measured, target) that is only shown."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One measured figure: ``value`` in ``unit``; it passes when it is below ``limit`` (when there is one),
    or at or above it when ``at_least``.

    ``shown`` replaces the number in the table when it says more (e.g. "12.3 s (11.9-13.0)")."""

    name: str
    value: float | None
    unit: str = ""
    limit: float | None = None
    shown: str = ""
    note: str = ""
    at_least: bool = False

    @property
    def measured(self) -> str:
        if self.shown:
            return self.shown
        if self.value is None:
            return "-"
        return f"{self.value:.3g} {self.unit}".strip()

    @property
    def target(self) -> str:
        if self.limit is None:
            return ""
        return f"{'>=' if self.at_least else '<'} {self.limit:g} {self.unit}".strip()

    @property
    def passed(self) -> bool | None:
        if self.limit is None or self.value is None:
            return None
        return self.value >= self.limit if self.at_least else self.value < self.limit


def median_wall(command: Sequence[str], *, rounds: int = 3) -> tuple[float, list[float]]:
    """The median wall seconds of ``rounds`` runs of ``command`` (each must exit 0), and every run's."""
    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(list(command), capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-800:]!r}")
    return statistics.median(walls), walls
