"""A marathon collects less from its first step to its score: the scoring reads the bundle while the twin's
objects are still in memory, and at the default thresholds the collector traversed them all."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from orchestrator.run import runner
from orchestrator.run.config import RunConfig


def test_the_whole_run_collects_less_and_the_thresholds_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    result = object()

    def body(config: RunConfig, **_: Any) -> Any:
        seen.append(gc.get_threshold())
        return result

    before = gc.get_threshold()
    monkeypatch.setattr(runner, "_run_marathon", body)
    assert runner.run_marathon(RunConfig(app="online-boutique", seed=1, agent="noop")) is result
    assert seen == [runner.GC_THRESHOLDS]
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_when_the_run_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def body(config: RunConfig, **_: Any) -> Any:
        raise RuntimeError("the run failed")

    before = gc.get_threshold()
    monkeypatch.setattr(runner, "_run_marathon", body)
    with pytest.raises(RuntimeError):
        runner.run_marathon(RunConfig(app="online-boutique", seed=1, agent="noop"))
    assert gc.get_threshold() == before
