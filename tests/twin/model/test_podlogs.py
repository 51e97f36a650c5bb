"""Log line timestamps: the whole seconds a step's lines fall in are formatted once and reused."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.twin import timefmt
from orchestrator.twin.model.podlogs import stamp


def _formatted(t: float) -> str:
    moment = timefmt.EPOCH + timedelta(seconds=t)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _instants() -> list[float]:
    draw = random.Random(5)
    edges = [0.0, 1e-7, 0.0004995, 0.0005, 0.9995, 0.99949999, 59.9999995, 86399.9999996, -0.0000004, -3.2]
    steps = [now - 5.0 + min(4.999, 0.05 + 0.037 * i) for now in (5.0, 3600.0, 86400.0) for i in range(140)]
    return edges + steps + [draw.uniform(-100.0, 1e7) for _ in range(2000)]


def test_a_stamp_is_the_moment_formatted_to_the_millisecond() -> None:
    for t in _instants():
        assert stamp(t) == _formatted(t), t


@pytest.mark.parametrize("epoch", [datetime(2031, 2, 28, 23, 59, 59, tzinfo=UTC),
                                   datetime(2030, 6, 1, 12, 0, 0, 999_700, tzinfo=UTC)])  # fmt: skip
def test_a_stamp_follows_the_epoch_of_the_process(epoch: datetime, monkeypatch: pytest.MonkeyPatch) -> None:
    for t in _instants()[:200]:
        stamp(t)  # seconds of the fixed epoch are formatted first: none of them may answer for the new one
    monkeypatch.setattr(timefmt, "EPOCH", epoch)
    for t in _instants():
        assert stamp(t) == _formatted(t), t
