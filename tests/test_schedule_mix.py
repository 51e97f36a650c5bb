"""The schedules a run draws (admitted entries) against the published design: the injected categories
follow the production weights, and concurrency comes near the published average and peak: a run's default
load is its app's published_schedule."""

from __future__ import annotations

from collections import Counter

import pytest
from scipy.stats import chisquare

from orchestrator.catalog.admissions import admitted_ids
from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.cli import main
from orchestrator.schedule import ScheduleParams, category_weights, default_load, plan_schedule
from orchestrator.schedule_commands import AVERAGE_TOLERANCE, PEAK_TOLERANCE, summarise

SEEDS = 1000


def _admitted(app: str) -> list[Entry]:
    admitted = admitted_ids(app)
    return [e for e in load_catalog(app).entries if admitted is None or e.id in admitted]


def _drawn_from(app: str) -> tuple[list[Entry], ScheduleParams]:
    """The entries a run draws from and the schedule parameters a run has by default."""
    count, cap = default_load(app)
    return _admitted(app), ScheduleParams(fault_count=count, max_concurrent=cap)


@pytest.mark.parametrize("app", app_names())
def test_the_injected_categories_follow_the_production_weights(app: str) -> None:
    # The schedules a run injects by default (the app's published_schedule).
    entries, params = _drawn_from(app)
    injected: Counter[str] = Counter()
    for seed in range(SEEDS):
        plan = plan_schedule(app=app, entries=entries, seed=seed, params=params)
        injected.update(a.category for a in plan.activations)
    weights = category_weights(e.category for e in entries)
    total = sum(injected.values())
    observed = [injected[c] for c in weights]
    expected = [w * total for w in weights.values()]
    result = chisquare(observed, expected)
    assert result.pvalue > 0.01, (
        f"{app}: injected {dict(zip(map(str, weights), observed, strict=True))} over {SEEDS} seeds, "
        f"p = {result.pvalue:.3g}"
    )


def test_the_default_load_is_the_published_schedule() -> None:
    for app in app_names():
        published = load_topology(app).published_schedule
        assert published is not None, f"{app} has no published_schedule"
        assert default_load(app) == (published.fault_count, published.max_concurrent)


@pytest.mark.parametrize("app", app_names())
def test_published_schedules_come_near_the_published_concurrency(app: str) -> None:
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
