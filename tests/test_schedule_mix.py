"""The schedules a run draws (admitted entries, each app's default parameters) against the published
design: concurrency comes near the published average and peak."""

from __future__ import annotations

import pytest

from orchestrator.catalog.admissions import admitted_ids
from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.cli import main
from orchestrator.schedule import ScheduleParams
from orchestrator.schedule_commands import AVERAGE_TOLERANCE, PEAK_TOLERANCE, summarise


def _drawn_from(app: str) -> tuple[list[Entry], ScheduleParams]:
    admitted = admitted_ids(app)
    entries = [e for e in load_catalog(app).entries if admitted is None or e.id in admitted]
    defaults = load_topology(app).schedule_defaults
    assert defaults is not None, f"{app} has no schedule_defaults"
    return entries, ScheduleParams(fault_count=defaults.fault_count, max_concurrent=defaults.max_concurrent)


@pytest.mark.parametrize("app", app_names())
def test_default_schedules_come_near_the_published_concurrency(app: str) -> None:
    entries, params = _drawn_from(app)
    published = load_topology(app).published_concurrency
    assert published is not None
    summary = summarise(app=app, seeds=range(1, 51), params=params, entries=entries)
    assert abs(summary.average - published.average) <= AVERAGE_TOLERANCE, summary
    assert abs(summary.peak - published.peak) <= PEAK_TOLERANCE, summary


def test_marathon_schedule_summarises_seeds_beside_the_published_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schedule", "--app", "train-ticket", "--seeds", "1-50"]) == 0
    out = capsys.readouterr().out
    entries, params = _drawn_from("train-ticket")
    summary = summarise(app="train-ticket", seeds=range(1, 51), params=params, entries=entries)
    assert out.startswith(f"train-ticket, seeds 1-50: {summary.placed:.1f} faults placed per schedule\n")
    rows = {
        " ".join(line.split()[:-2]): line.split()[-2:] for line in out.splitlines() if line.startswith("  ")
    }
    assert rows["mean over the seeds"] == [f"{summary.average:.2f}", f"{summary.peak:.1f}"]
    assert rows["published"] == ["6.10", "11"]
    assert "within 0.5 of the published average and 1 of its peak" in out
