from __future__ import annotations

import argparse
import json

import pytest

from orchestrator.catalog.admissions import admitted_ids
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.cli import main
from orchestrator.run.config import make_config
from orchestrator.run.plan import make_plan
from orchestrator.schedule import (
    ScheduleParams,
    concurrency,
    decoy_inputs,
    default_load,
    plan_schedule,
    schedule_to_record,
)
from orchestrator.schedule_commands import clock, report, seed_argument
from tests.test_schedule_catalog import APP, fixture_entries

ENTRIES = fixture_entries()
PUBLISHED = load_topology(APP).published_concurrency


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("text", ["-1", "abc", "4.2", ""])
def test_a_seed_that_is_not_a_non_negative_integer_is_a_usage_error(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["schedule", "--app", APP, f"--seed={text}"], capsys)
    assert f"seed must be a non-negative integer, got {text!r}" in err


def test_the_seed_type_accepts_zero_and_large_integers() -> None:
    assert seed_argument("0") == 0
    assert seed_argument("18446744073709551615") == 2**64 - 1
    with pytest.raises(argparse.ArgumentTypeError):
        seed_argument("0x10")


def test_an_unknown_app_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["schedule", "--app", "petclinic", "--seed", "1"], capsys)
    assert "invalid choice: 'petclinic'" in err


@pytest.mark.parametrize(
    ("flag", "value", "shown"),
    [
        ("--faults", "-3", "--faults = -3: must be >= 0"),
        ("--injection-period", "100", "--injection-period = 100: is not a multiple of delta_s = 120"),
        ("--observation-period", "0", "--observation-period = 0: must be >= 1"),
        ("--max-concurrent", "0", "--max-concurrent = 0: must be >= 1"),
        ("--ramp", "-1", "--ramp = -1.0: must be a finite number > 0"),
    ],
)
def test_bad_schedule_options_exit_2_naming_the_flag_and_value(
    flag: str, value: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schedule", "--app", APP, "--seed", "42", f"{flag}={value}"]) == 2
    assert shown in capsys.readouterr().err


def test_the_clock_shows_minutes_and_seconds_past_the_hour() -> None:
    assert clock(0) == "00:00"
    assert clock(125) == "02:05"
    assert clock(5400) == "90:00"


def test_the_table_lists_every_activation_and_the_published_concurrency() -> None:
    params = ScheduleParams()
    text = report(app=APP, seed=42, params=params, entries=ENTRIES, published=PUBLISHED, as_json=False)
    schedule = plan_schedule(app=APP, entries=ENTRIES, seed=42, params=params)
    stats = concurrency(schedule)
    ids = tuple(a.catalog_id for a in schedule.activations)
    rows = [line for line in text.splitlines() if line.endswith(ids)]
    assert len(rows) == len(schedule.activations)
    assert len(schedule.activations) + len(schedule.skipped) == 60
    first = schedule.activations[0]
    shown = [clock(first.at_s), clock(first.duration_s), first.category, first.mechanism, first.target]
    assert rows[0].split() == [*shown, first.catalog_id]
    assert f"{stats.average_run:.2f}" in text and f"{stats.peak_run:>4}" in text
    assert "published, online-boutique" in text and "5.80    10" in text
    assert schedule.content_hash[:12] in text


def test_the_json_report_carries_schedule_concurrency_and_published_figures() -> None:
    params = ScheduleParams(max_concurrent=8)
    text = report(app=APP, seed=7, params=params, entries=ENTRIES, published=PUBLISHED, as_json=True)
    assert text == report(app=APP, seed=7, params=params, entries=ENTRIES, published=PUBLISHED, as_json=True)
    record = json.loads(text)
    schedule = plan_schedule(app=APP, entries=ENTRIES, seed=7, params=params)
    assert record["schedule"] == json.loads(json.dumps(schedule_to_record(schedule)))
    assert record["concurrency"]["peak_run"] <= 8
    assert record["published"] == {"average": 5.8, "peak": 10}


def test_marathon_schedule_prints_the_online_boutique_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", "--app", "online-boutique", "--seed", "42"]) == 0
    out = capsys.readouterr().out
    catalog = load_catalog("online-boutique")
    scopes, services = decoy_inputs(catalog, load_topology("online-boutique"))
    admitted = admitted_ids("online-boutique")
    assert admitted is not None
    count, cap = default_load("online-boutique")  # the app's published_schedule
    schedule = plan_schedule(
        app="online-boutique", entries=[e for e in catalog.entries if e.id in admitted], seed=42,
        params=ScheduleParams(fault_count=count, max_concurrent=cap), scopes=scopes, decoy_services=services,
    )  # fmt: skip
    assert out.startswith(f"schedule {schedule.content_hash[:12]} for online-boutique, seed 42\n")
    assert f"{count} arrivals: {len(schedule.activations)} placed" in out
    last_words = [line.split()[-1] for line in out.splitlines() if line.strip()]
    listed = [word for word in last_words if word in catalog.by_id]
    assert listed == [a.catalog_id for a in schedule.activations]
    assert schedule.decoys and f"{len(schedule.decoys)} decoys (harmless changes" in out
    listing = out.split(" decoys (harmless changes")[1].split("\n\n")[0].splitlines()[1:]
    assert [tuple(line.split()[1:]) for line in listing] == [(d.change, d.target) for d in schedule.decoys]
    assert "published, online-boutique" in out


def test_marathon_schedule_plans_from_the_admitted_entries_as_a_run_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Astronomy Shop has rejected entries: the listing must be the schedule a run of the seed injects.
    assert main(["schedule", "--app", "astronomy-shop", "--seed", "3", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["schedule"]
    plan = make_plan(make_config(app="astronomy-shop", seed=3, agent="noop"))
    assert listed == schedule_to_record(plan.schedule)
    rejected = set(load_catalog("astronomy-shop").by_id) - (admitted_ids("astronomy-shop") or set())
    assert rejected and not rejected & {a["catalog_id"] for a in listed["activations"]}


def test_marathon_schedule_json_is_byte_stable_and_follows_the_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outputs = []
    for seed, faults in (("42", "10"), ("42", "10"), ("43", "10")):
        assert (
            main(["schedule", "--app", "online-boutique", "--seed", seed, "--faults", faults, "--json"]) == 0
        )
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] != outputs[2]
    record = json.loads(outputs[0])
    assert record["schedule"]["seed"] == 42 and record["schedule"]["params"]["fault_count"] == 10
    assert len(record["schedule"]["activations"]) == 10
