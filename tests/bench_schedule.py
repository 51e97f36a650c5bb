"""Schedule generation time and the concurrency the default schedule produces, for ``make bench``."""

from __future__ import annotations

import statistics
import time

from orchestrator.catalog.faults import Entry
from orchestrator.catalog.topologies import load_topology
from orchestrator.errors import CatalogError
from orchestrator.schedule import ScheduleParams, concurrency, plan_schedule
from tests.test_schedule_catalog import APP, fixture_entries

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
    published = load_topology(APP).published_concurrency
    assert published is not None
    average, peak = published.average, published.peak
    # 100 arrivals under a cap of 10 place about 60 faults and come closest to the published figures.
    for count, cap in ((60, None), (60, 10), (100, 10)):
        params = ScheduleParams(fault_count=count, max_concurrent=cap)
        stats = concurrency(plan_schedule(app=APP, entries=entries, seed=42, params=params))
        measured = f"{stats.average_run:.2f} / {stats.peak_run} ({stats.placed} placed)"
        rows.append(
            (
                f"seed 42 active avg / peak, {count} arrivals, cap {cap}",
                measured,
                f"published {average} / {peak}",
            )
        )
    return rows
