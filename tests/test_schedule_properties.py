"""Properties every schedule keeps, whatever the seed, parameters and catalog."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.catalog.faults import interference_keys
from orchestrator.schedule import Schedule, ScheduleParams, concurrency, plan_schedule
from tests.test_schedule_catalog import APP, SERVICES, fixture_entries

ALL_ENTRIES = fixture_entries()
KEYS = {entry.id: interference_keys(entry) for entry in ALL_ENTRIES}
CULPRITS = {entry.id: frozenset(entry.culprits) for entry in ALL_ENTRIES}


@st.composite
def params(draw: st.DrawFn) -> ScheduleParams:
    delta = draw(st.sampled_from([30, 60, 120, 300]))
    low = draw(st.integers(min_value=1, max_value=900))
    return ScheduleParams(
        fault_count=draw(st.integers(min_value=0, max_value=90)),
        injection_period_s=delta * draw(st.integers(min_value=1, max_value=40)),
        observation_period_s=delta * draw(st.integers(min_value=1, max_value=20)),
        ramp=draw(st.floats(min_value=0.25, max_value=10.0)),
        min_duration_s=low,
        max_duration_s=low + draw(st.integers(min_value=0, max_value=900)),
        delta_s=delta,
        max_concurrent=draw(st.none() | st.integers(min_value=1, max_value=12)),
        exclusive_culprits=draw(st.booleans()),
    )


@st.composite
def schedules(draw: st.DrawFn) -> Schedule:
    # Small catalogs make conflicts and skips common, large ones make long overlaps common.
    services = draw(st.lists(st.sampled_from(SERVICES), min_size=1, max_size=4, unique=True))
    entries = [e for e in ALL_ENTRIES if e.target in services or e.target in {"redis-cart", "currency-api"}]
    chosen = st.lists(st.sampled_from(entries), min_size=1, max_size=len(entries), unique_by=lambda e: e.id)
    subset = draw(chosen)
    seed = draw(st.integers(min_value=0, max_value=2**63))
    return plan_schedule(app=APP, entries=subset, seed=seed, params=draw(params()))


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_every_activation_starts_in_the_injection_period_and_ends_by_the_run_end(schedule: Schedule) -> None:
    p = schedule.params
    for a in schedule.activations:
        assert 0 <= a.at_s < p.injection_period_s
        assert a.at_s < a.end_s <= p.run_end_s
        assert a.duration_s >= min(p.min_duration_s, p.run_end_s - a.at_s)
        assert a.duration_s <= p.max_duration_s


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_no_two_overlapping_activations_share_an_entry_an_interference_key_or_a_culprit(
    schedule: Schedule,
) -> None:
    activations = schedule.activations
    for i, a in enumerate(activations):
        for b in activations[i + 1 :]:
            if a.at_s < b.end_s and b.at_s < a.end_s:
                assert a.catalog_id != b.catalog_id
                assert KEYS[a.catalog_id].isdisjoint(KEYS[b.catalog_id]), (a, b)
                if schedule.params.exclusive_culprits:
                    assert CULPRITS[a.catalog_id].isdisjoint(CULPRITS[b.catalog_id]), (a, b)


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_the_cap_holds_and_every_arrival_is_placed_or_recorded_as_skipped(schedule: Schedule) -> None:
    stats = concurrency(schedule)
    cap = schedule.params.max_concurrent
    if cap is not None:
        assert stats.peak_run <= cap
    else:
        assert stats.skipped_cap == 0
    arrivals = sorted([a.arrival for a in schedule.activations] + [s.arrival for s in schedule.skipped])
    assert arrivals == list(range(schedule.params.fault_count))
    assert [a.at_s for a in schedule.activations] == sorted(a.at_s for a in schedule.activations)
