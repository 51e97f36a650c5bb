"""The twin's two clocks: stepped (the world moves only when told) and realtime (wall clock x speed).

Simulated time is seconds since the twin epoch (``timefmt.EPOCH``); the world always moves in whole steps,
while the clock can stand at any instant between two of them.
The realtime driver is the one place that reads the wall clock, and it only decides *when* to advance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

ClockMode = Literal["stepped", "realtime"]
STEP_SECONDS = 5.0


class StepClock:
    """Carries a target time forward and yields the step instants that fall before it."""

    def __init__(self, *, start: float = 0.0, step_seconds: float = STEP_SECONDS) -> None:
        if step_seconds <= 0:
            raise ValueError(f"step_seconds must be positive, got {step_seconds}")
        self.now = start
        self.target = start
        self.step_seconds = step_seconds

    @property
    def instant(self) -> float:
        """The time the clock was moved to: the last step, or past it by a remainder smaller than a step
        (the world holds the state of its last step until the next one)."""
        return round(self.target, 6)

    def advance(self, seconds: float) -> list[float]:
        """The step instants reached by moving ``seconds`` forward (a remainder carries to the next call)."""
        if seconds < 0:
            raise ValueError(f"cannot advance by a negative amount: {seconds}")
        self.target += seconds
        steps: list[float] = []
        while self.now + self.step_seconds <= self.target + 1e-9:
            self.now = round(self.now + self.step_seconds, 6)
            steps.append(self.now)
        return steps


class RealtimeDriver:
    """A background thread that advances the world by wall time x ``speed``, one step at a time."""

    def __init__(
        self, *, advance: Callable[[float], object], speed: float = 1.0, step_seconds: float = STEP_SECONDS
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self._advance = advance
        self.speed = speed
        self.step_seconds = step_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="twin-realtime-clock", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        began = time.monotonic()
        simulated = 0.0
        try:
            while not self._stop.is_set():
                due = (time.monotonic() - began) * self.speed
                while simulated + self.step_seconds <= due and not self._stop.is_set():
                    self._advance(self.step_seconds)
                    simulated += self.step_seconds
                wait = (simulated + self.step_seconds - due) / self.speed
                self._stop.wait(max(0.01, min(wait, 1.0)))
        except BaseException as exc:  # recorded for stop(): a dying clock thread must not vanish silently
            self.error = exc

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
