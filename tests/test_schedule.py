from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

import pytest

from orchestrator.catalog.faults import CATEGORY_WEIGHTS, Category
from orchestrator.errors import ScheduleError
from orchestrator.rng import derive
from orchestrator.schedule import (
    SCHEDULE_VERSION,
    Activation,
    Schedule,
    ScheduleParams,
    arrival_times,
    category_weights,
    concurrency,
    draw_category,
    plan_schedule,
    schedule_to_json,
)
from tests.test_schedule_catalog import APP, fixture_entries

ENTRIES = fixture_entries()


def _plan(seed: int = 42, **params: Any) -> Schedule:
    return plan_schedule(app=APP, entries=ENTRIES, seed=seed, params=ScheduleParams(**params))


def test_schedule_is_identical_for_the_same_seed() -> None:
    first = schedule_to_json(_plan(42))
    second = schedule_to_json(plan_schedule(app=APP, entries=fixture_entries(), seed=42))
    assert first.encode() == second.encode()
    record = json.loads(first)
    assert len(record["activations"]) + len(record["skipped"]) == 60
    assert len(record["activations"]) >= 50


def test_another_seed_gives_another_schedule() -> None:
    seed_42, seed_43 = _plan(42), _plan(43)
    assert [a.catalog_id for a in seed_42.activations] != [a.catalog_id for a in seed_43.activations]
    assert [a.at_s for a in seed_42.activations] != [a.at_s for a in seed_43.activations]
    assert seed_42.content_hash != seed_43.content_hash


def test_the_order_entries_are_given_in_does_not_change_the_schedule() -> None:
    shuffled = list(ENTRIES)
    random.Random(7).shuffle(shuffled)
    assert schedule_to_json(plan_schedule(app=APP, entries=shuffled, seed=42)) == schedule_to_json(_plan(42))


def test_entries_of_other_apps_are_ignored() -> None:
    others = fixture_entries("train-ticket", services=("ts-order-service",))
    mixed = plan_schedule(app=APP, entries=[*ENTRIES, *others], seed=42)
    assert schedule_to_json(mixed) == schedule_to_json(_plan(42))


def test_the_content_hash_follows_catalog_params_and_seed() -> None:
    base = _plan(42)
    fewer_entries = plan_schedule(app=APP, entries=ENTRIES[1:], seed=42)
    capped = _plan(42, max_concurrent=9)
    assert len({base.content_hash, fewer_entries.content_hash, capped.content_hash}) == 3
    assert base.entries_hash != fewer_entries.entries_hash
    assert base.content_hash == _plan(42).content_hash


def test_the_json_is_canonical_with_sorted_keys_and_no_spaces() -> None:
    text = schedule_to_json(_plan(42))
    record = json.loads(text)
    assert json.dumps(record, sort_keys=True, separators=(",", ":")) == text
    first = record["activations"][0]
    assert sorted(first) == [
        "arrival", "at_s", "catalog_id", "category", "duration_s", "end_s", "index", "mechanism", "target",
    ]  # fmt: skip
    assert record["params"]["ramp"] == 4.0
    assert record["version"] == SCHEDULE_VERSION == 5
    assert record["decoys"] == []  # no services to change were given
    assert record["params"]["exclusive_culprits"] is True


def test_category_draws_follow_the_production_weights() -> None:
    weights = category_weights(Category)
    rng = derive(42, "test.categories")
    draws = Counter(draw_category(rng, weights) for _ in range(20_000))
    total_weight = sum(CATEGORY_WEIGHTS.values())
    for category, weight in CATEGORY_WEIGHTS.items():
        assert abs(draws[category] / 20_000 - weight / total_weight) < 0.01, category


def test_an_arrival_keeps_the_category_it_drew_when_it_drifts() -> None:
    # Every arrival draws its category once, in arrival order; a crowded category makes it wait or be
    # skipped, never turn into another category, so the injected mix keeps the production proportions.
    # One service with code, so its categories compete for it (one culprit at a time).
    crowded = fixture_entries(services=("cartservice",))
    schedule = plan_schedule(app=APP, entries=crowded, seed=7, params=ScheduleParams(fault_count=60))
    rng = derive(7, "schedule.categories")
    weights = category_weights(e.category for e in crowded)
    drawn = [draw_category(rng, weights) for _ in range(60)]
    drifted = [a for a in schedule.activations if a.at_s > _drawn_second(schedule, a.arrival)]
    assert drifted and schedule.skipped  # the service was busy: some arrivals waited, some never fitted
    assert [a.category for a in schedule.activations] == [drawn[a.arrival] for a in schedule.activations]


def _drawn_second(schedule: Schedule, arrival: int) -> int:
    """The second an arrival takes with nothing in its way."""
    params = schedule.params
    times = arrival_times(derive(schedule.seed, "schedule.arrivals"), count=params.fault_count,
                          period_s=params.injection_period_s, ramp=params.ramp)  # fmt: skip
    return min(math.floor(times[arrival]), params.injection_period_s - 1)


def _drawn_duration(schedule: Schedule, arrival: int) -> int:
    params = schedule.params
    rng = derive(schedule.seed, "schedule.durations")
    drawn = [rng.uniform(params.min_duration_s, params.max_duration_s) for _ in range(arrival + 1)]
    return round(drawn[arrival])


def test_category_weights_are_renormalised_over_the_categories_present() -> None:
    weights = category_weights([Category.CODE_BUG, Category.AUTHENTICATION])
    assert set(weights) == {Category.CODE_BUG, Category.AUTHENTICATION}
    assert weights[Category.CODE_BUG] == pytest.approx(27.0 / 31.6)
    assert sum(weights.values()) == pytest.approx(1.0)


def test_drawing_from_no_category_is_an_error() -> None:
    with pytest.raises(ScheduleError, match="no category"):
        draw_category(random.Random(1), {})


def test_arrivals_follow_the_four_fold_ramp() -> None:
    times = arrival_times(derive(1, "test.arrivals"), count=20_000, period_s=3600, ramp=4.0)
    assert times == sorted(times)
    assert times[0] >= 0.0 and times[-1] < 3600
    # Density 1 + 3x on [0, 1) normalised by 2.5: the first quarter holds 0.1375, the last 0.3625.
    first = sum(t < 900 for t in times) / len(times)
    last = sum(t >= 2700 for t in times) / len(times)
    assert abs(first - 0.1375) < 0.01
    assert abs(last - 0.3625) < 0.01


def test_a_ramp_of_one_gives_uniform_arrivals() -> None:
    times = arrival_times(derive(2, "test.arrivals"), count=20_000, period_s=1000, ramp=1.0)
    assert abs(sum(times) / len(times) - 500) < 10
    assert abs(sum(t < 250 for t in times) / len(times) - 0.25) < 0.01


def test_faults_start_at_their_drawn_second_and_last_their_drawn_duration() -> None:
    # Not rounded to invocation boundaries: a fault lasts as long as drawn, anywhere in 4-12 minutes.
    schedule = _plan(42)
    assert [a.index for a in schedule.activations] == list(range(len(schedule.activations)))
    assert [a.at_s for a in schedule.activations] == sorted(a.at_s for a in schedule.activations)
    undrifted = [a for a in schedule.activations if a.at_s == _drawn_second(schedule, a.arrival)]
    assert len(undrifted) > len(schedule.activations) // 2
    for a in schedule.activations:
        assert a.duration_s == min(_drawn_duration(schedule, a.arrival), schedule.params.run_end_s - a.at_s)
    assert any(a.at_s % 120 for a in schedule.activations) and any(
        a.duration_s % 120 for a in schedule.activations
    )
    durations = [a.duration_s for a in schedule.activations]
    assert min(durations) < 300 and max(durations) > 660  # the whole 240-720 s range, not 360-720


def test_a_full_cap_skips_the_arrival_and_records_it() -> None:
    schedule = _plan(42, max_concurrent=3)
    stats = concurrency(schedule)
    assert stats.peak_run == 3
    assert stats.skipped_cap > 0
    assert stats.placed + stats.skipped_cap + stats.skipped_conflict == 60
    assert {s.reason for s in schedule.skipped} == {"cap"}


def test_an_arrival_without_a_compatible_entry_is_skipped_deterministically() -> None:
    one = [e for e in ENTRIES if e.id == "cartservice-release-nil"]
    params = ScheduleParams(fault_count=10)
    schedule = plan_schedule(app=APP, entries=one, seed=5, params=params)
    assert {s.reason for s in schedule.skipped} == {"conflict"}
    for earlier, later in zip(schedule.activations, schedule.activations[1:], strict=False):
        assert later.at_s >= earlier.end_s
    assert schedule == plan_schedule(app=APP, entries=one, seed=5, params=params)


def test_a_conflicting_category_is_dropped_and_another_drawn() -> None:
    # The code category only holds two releases of one Deployment, which share a slot.
    pair = [e for e in ENTRIES if e.id in {"cartservice-release-nil", "cartservice-release-loop"}]
    auth = [e for e in ENTRIES if e.category is Category.AUTHENTICATION]
    schedule = plan_schedule(app=APP, entries=[*pair, *auth], seed=3, params=ScheduleParams(fault_count=40))
    for a in schedule.activations:
        live = [b for b in schedule.activations if b.at_s <= a.at_s < b.end_s and b is not a]
        assert sum(b.category is Category.CODE_BUG for b in live) + (a.category is Category.CODE_BUG) <= 1
    assert sum(a.category is Category.AUTHENTICATION for a in schedule.activations) > 0


def _activation(index: int, at_s: int, end_s: int) -> Activation:
    return Activation(
        index=index, arrival=index, at_s=at_s, duration_s=end_s - at_s, catalog_id=f"fault-{index}",
        category=Category.CODE_BUG, mechanism="code", target="frontend",
    )  # fmt: skip


def test_concurrency_is_time_weighted_over_the_run_and_the_injection_period() -> None:
    params = ScheduleParams(injection_period_s=300, observation_period_s=300, delta_s=60)
    schedule = Schedule(
        app=APP, seed=0, params=params, entries_hash="", content_hash="", skipped=(),
        activations=(_activation(0, 0, 120), _activation(1, 60, 300), _activation(2, 240, 600)),
    )  # fmt: skip
    stats = concurrency(schedule)
    assert stats.average_run == pytest.approx(720 / 600)
    assert stats.average_injection == pytest.approx(420 / 300)
    assert (stats.peak_run, stats.peak_injection) == (2, 2)
    assert stats.steps == ((0, 1), (60, 2), (120, 1), (240, 2), (300, 1), (600, 0))


def test_default_parameters_give_a_marathon_with_overlapping_faults() -> None:
    stats = concurrency(_plan(42))
    assert stats.placed + stats.skipped_conflict == 60
    assert stats.placed >= 50
    assert 3.0 < stats.average_run < 9.0
    assert stats.peak_injection == stats.peak_run
    assert stats.average_injection > stats.average_run


@pytest.mark.parametrize("seed", [-1, 1.5, "42", True, None])
def test_a_bad_seed_is_rejected_by_name_and_value(seed: Any) -> None:
    with pytest.raises(ScheduleError) as raised:
        plan_schedule(app=APP, entries=ENTRIES, seed=seed)
    assert f"seed = {seed!r}" in str(raised.value)


@pytest.mark.parametrize(
    ("params", "field", "value"),
    [
        ({"fault_count": -1}, "fault_count", "-1"),
        ({"fault_count": 2.5}, "fault_count", "2.5"),
        ({"injection_period_s": 0}, "injection_period_s", "0"),
        ({"observation_period_s": -120}, "observation_period_s", "-120"),
        ({"delta_s": 0}, "delta_s", "0"),
        ({"min_duration_s": 800}, "min_duration_s", "800"),
        ({"ramp": 0.0}, "ramp", "0.0"),
        ({"ramp": math.nan}, "ramp", "nan"),
        ({"max_concurrent": 0}, "max_concurrent", "0"),
        ({"injection_period_s": 3650}, "injection_period_s", "3650"),
        ({"observation_period_s": 1000}, "observation_period_s", "1000"),
    ],
)
def test_bad_parameters_are_rejected_by_name_and_value(
    params: dict[str, Any], field: str, value: str
) -> None:
    with pytest.raises(ScheduleError) as raised:
        ScheduleParams(**params)
    assert f"{field} = {value}" in str(raised.value)


def test_every_bad_parameter_is_reported_at_once() -> None:
    with pytest.raises(ScheduleError) as raised:
        ScheduleParams(fault_count=-1, injection_period_s=100, ramp=-2.0, min_duration_s=900)
    fields = {p.field for p in raised.value.problems}
    assert fields == {"fault_count", "injection_period_s", "ramp", "min_duration_s"}


def test_an_app_without_entries_cannot_be_planned() -> None:
    with pytest.raises(ScheduleError, match="app = astronomy-shop"):
        plan_schedule(app="astronomy-shop", entries=ENTRIES, seed=1)
    empty = plan_schedule(app="astronomy-shop", entries=ENTRIES, seed=1, params=ScheduleParams(fault_count=0))
    assert empty.activations == () and empty.skipped == ()


def test_a_catalog_with_a_repeated_catalog_id_is_rejected_naming_the_id() -> None:
    repeated = next(e for e in ENTRIES if e.id == "frontend-pod-kill")
    with pytest.raises(ScheduleError, match="entries = frontend-pod-kill: the id appears more than once"):
        plan_schedule(app=APP, entries=[*ENTRIES, repeated], seed=1)


def _overlap(a: Activation, b: Activation) -> bool:
    return a.at_s < b.end_s and b.at_s < a.end_s


def test_a_service_is_the_culprit_of_one_active_fault_at_a_time_unless_that_rule_is_off() -> None:
    culprits = {entry.id: set(entry.culprits) for entry in ENTRIES}

    def shared(schedule: Schedule) -> int:
        acts = schedule.activations
        return sum(
            1
            for i, a in enumerate(acts)
            for b in acts[i + 1 :]
            if _overlap(a, b) and culprits[a.catalog_id] & culprits[b.catalog_id]
        )

    assert shared(_plan(42)) == 0
    assert shared(_plan(42, exclusive_culprits=False)) > 0
    assert len(_plan(42, exclusive_culprits=False).activations) == 60


def test_an_arrival_with_no_compatible_entry_drifts_to_a_later_boundary() -> None:
    # One entry only: while it is active every later arrival conflicts with it and must wait for its revert.
    only = [next(e for e in ENTRIES if e.id.endswith("release-nil"))]
    params = ScheduleParams(fault_count=4, injection_period_s=1200, min_duration_s=240, max_duration_s=240)
    schedule = plan_schedule(app=APP, entries=only, seed=5, params=params)
    times = arrival_times(derive(5, "schedule.arrivals"), count=4, period_s=1200, ramp=4.0)
    arrived = {i: math.ceil(t / 120) * 120 for i, t in enumerate(times)}
    acts = schedule.activations
    assert len(acts) + len(schedule.skipped) == 4
    for a, b in zip(acts, acts[1:], strict=False):
        assert b.at_s >= a.end_s
    drifted = [a for a in acts if a.at_s > arrived[a.arrival]]
    assert drifted, (acts, arrived)  # some arrival came while the entry was active and was placed later
    for a in drifted:
        assert any(b.end_s == a.at_s for b in acts)  # at the very boundary the blocking fault was reverted
