"""The terminal's progress line follows the run's events: a boundary moves it, with the counts of the
concurrency event before it."""

from __future__ import annotations

import pytest

from orchestrator.run.events import Boundary, Concurrency, Injected
from orchestrator.run.progress import RunProgress


def test_a_boundary_shows_its_place_and_the_counts_reported_before_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the whole line, not cut at a terminal's width
    with RunProgress(quiet=False, title="online-boutique seed 42 runbook") as bar:
        bar.handle(Concurrency(t=120.0, active=1, firing=0))
        bar.handle(Boundary(k=1, of=15, t=120.0))
        bar.handle(
            Injected(fault_id="f001", catalog_id="ob-x", t=240.0, category="network", target="frontend")
        )
        bar.handle(Concurrency(t=240.0, active=2, firing=1))
        bar.handle(Boundary(k=2, of=15, t=240.0))
    shown = capsys.readouterr().err
    assert "2/15" in shown and "t=4 min  faults active 2  alerts firing 1" in shown


def test_a_quiet_run_shows_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with RunProgress(quiet=True, title="quiet") as bar:
        bar.handle(Concurrency(t=120.0, active=1, firing=0))
        bar.handle(Boundary(k=1, of=15, t=120.0))
    assert capsys.readouterr() == ("", "")
