"""Schedule generation time and the concurrency the default schedule produces, for ``make bench``."""

from __future__ import annotations

import statistics
import time

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.topologies import load_topology
from orchestrator.errors import CatalogError
from orchestrator.schedule import ScheduleParams, plan_schedule
from orchestrator.schedule_commands import summarise
from tests.test_schedule_catalog import APP, fixture_entries
from tests.test_schedule_mix import _drawn_from

ROUNDS = 30


def _catalog() -> tuple[str, list[Entry]]:
    """The Online Boutique catalog when it loads, else the schedule tests' fixture catalog."""
    from orchestrator.catalog.loading import load_catalog

    try:
        return f"{APP} catalog", list(load_catalog(APP).entries)
    except CatalogError:
        return "fixture catalog", fixture_entries()


def _median_seconds(entries: list[Entry], params: ScheduleParams) -> float:
    timings = []  # the median of ROUNDS seeds, so one slow first call does not decide
    for seed in range(ROUNDS):
        started = time.perf_counter()
        plan_schedule(app=APP, entries=entries, seed=seed, params=params)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def bench() -> list[tuple[str, str, str]]:
    source, entries = _catalog()
    label = f"{source}, {len(entries)} entries"
    rows = []
    for cap in (None, 10):
        seconds = _median_seconds(entries, ScheduleParams(max_concurrent=cap))
        rows.append((f"plan 60 faults, cap {cap} ({label})", f"{seconds * 1000:.1f} ms", "< 100 ms"))
    for app in app_names():
        entries, params = _drawn_from(app)
        summary = summarise(app=app, seeds=range(1, 51), params=params, entries=entries)
        published = load_topology(app).published_concurrency
        assert published is not None
        rows.append(
            (
                f"{app}: seeds 1-50 active avg / peak, published_schedule"
                f" ({params.fault_count} arrivals, cap {params.max_concurrent})",
                f"{summary.average:.2f} / {summary.peak:.1f} ({summary.placed:.1f} placed)",
                f"published {published.average} / {published.peak} (+-0.5 / +-1)",
            )
        )
    return rows
