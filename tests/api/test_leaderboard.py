"""The leaderboard: the Student t interval, the mean over seeds of completed runs only (the latest run of a
seed), consistency per fault kind, incomplete runs apart; the same figures from the registry, over HTTP
and from ``marathon leaderboard`` on the registry or on sealed bundles."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from orchestrator.api.app import Settings, create_app
from orchestrator.api.leaderboard import Result, leaderboard, leaderboard_rows
from orchestrator.api.registry import Registry
from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.records import Record, RunEnded
from orchestrator.cli import main
from tests.score.scenario import act, alert, fault, probes, report

RIGHT = {"culprits": ["cartservice"], "artifact": "config:cartservice/env/REDIS_ADDR"}


def test_the_interval_of_the_mean_is_students_and_absent_with_one_seed() -> None:
    board = leaderboard(
        [_result("a", 1, 10.0), _result("b", 2, 20.0, order=1), _result("c", 3, 30.0, order=2)]
    )
    (row,) = board.rows
    assert row.ci95 is not None and row.mean == 20.0
    # sd 10, standard error 10 / sqrt(3), t(0.975, 2) = 4.302653 from the published table
    assert row.ci95.half_width == pytest.approx(4.302653 * 10 / math.sqrt(3), abs=1e-4)
    assert (row.ci95.low, row.ci95.high) == pytest.approx(
        (20.0 - row.ci95.half_width, 20.0 + row.ci95.half_width)
    )
    (single,) = leaderboard([_result("a", 1, 55.0)]).rows
    assert (single.n, single.mean, single.ci95) == (1, 55.0, None)
    (same,) = leaderboard([_result("a", 1, 7.0), _result("b", 2, 7.0, order=1)]).rows
    assert same.ci95 is not None and same.ci95.half_width == 0.0


def _outcome(kind: str, handled: bool) -> dict[str, Any]:
    return {"id": kind, "catalog_id": kind, "a": 1, "b": int(handled), "c": int(handled),
            "outcome": "handled_end_to_end" if handled else "correlated_only"}  # fmt: skip


def _result(
    run_id: str, seed: int, score: float | None, *, agent: str = "runbook", order: int = 0,
    status: str = "finished", reason: str | None = "completed", outcomes: list[dict[str, Any]] | None = None,
    **figures: float,
) -> Result:  # fmt: skip
    document = None if score is None else {"marathon_score": score, "outcomes": outcomes or [], **figures}
    return Result(
        run_id=run_id, app="online-boutique", agent=agent, seed=seed, status=status, reason=reason,
        score=document, order=("", order), created_at=f"2026-01-0{order % 9 + 1}", link=f"/runs/{run_id}",
        report=None,
    )  # fmt: skip


def test_the_mean_counts_each_seeds_latest_completed_run_and_lists_the_others_apart() -> None:
    results = [
        _result("r1", 1, 40.0, order=1, corr=0.5, rep=0.25, outcomes=[_outcome("ob-a", True)]),
        _result("r2", 2, 90.0, order=2, corr=0.0, rep=0.0, outcomes=[_outcome("ob-a", False)]),
        _result("r3", 3, 60.0, order=3, corr=0.0, rep=0.5,
                outcomes=[_outcome("ob-a", True), _outcome("ob-b", True), _outcome("ob-b", False)]),
        _result("r4", 2, 20.0, order=4, corr=1.0, rep=0.75, outcomes=[_outcome("ob-a", True)]),  # seed 2
        _result("s1", 4, 99.0, order=5, status="stopped", reason="stopped"),
        _result("f1", 5, None, order=6, status="failed", reason="error"),
        _result("i1", 6, None, order=7, status="interrupted", reason="interrupted"),
        _result("u1", 7, None, order=8),  # finished but never scored
        _result("o1", 1, 100.0, agent="oracle", order=9),
    ]  # fmt: skip
    board = leaderboard(reversed(results))  # the order of the input does not matter, ``order`` does
    assert [(row.agent, row.n, row.seeds) for row in board.rows] == [
        ("oracle", 1, [1]),
        ("runbook", 3, [1, 2, 3]),
    ]
    oracle, runbook = board.rows
    assert oracle.ci95 is None and oracle.mean == 100.0  # one seed: no interval
    # seed 2 is counted by r4 (its latest run), not r2: scores 40, 20, 60
    assert [(s.seed, s.run_id) for s in runbook.counted] == [(1, "r1"), (2, "r4"), (3, "r3")]
    assert runbook.mean == pytest.approx(40.0)
    assert runbook.ci95 is not None
    assert runbook.ci95.half_width == pytest.approx(4.302653 * 20.0 / math.sqrt(3), abs=1e-4)
    assert runbook.ci95.low == pytest.approx(40.0 - runbook.ci95.half_width)
    assert runbook.components == pytest.approx({"corr": 0.5, "rep": 0.5})  # r1, r4, r3
    # ob-a resolved in seeds 1, 2 (r4) and 3; ob-b only in seed 3, where one of its two faults was not
    kinds = {k.catalog_id: (k.seeds, k.resolved, k.share) for k in runbook.kinds}
    assert kinds == {"ob-a": (3, 3, 1.0), "ob-b": (1, 0, 0.0)}
    assert runbook.consistency == pytest.approx(0.5)
    assert (runbook.runs, runbook.best.run_id, runbook.latest.run_id) == (4, "r2", "r4")
    assert [(run.run_id, run.status) for run in board.incomplete] == [
        ("s1", "stopped"), ("f1", "failed"), ("i1", "interrupted"), ("u1", "finished"),
    ]  # fmt: skip


def test_a_pair_without_fault_outcomes_has_no_consistency_and_no_components() -> None:
    (row,) = leaderboard([_result("a", 1, 10.0), _result("b", 2, 30.0, order=1)]).rows
    assert (row.consistency, row.kinds, row.components) == (None, [], {})
    assert row.mean == 20.0


def _register(
    registry: Registry, run_id: str, *, seed: int, status: str, reason: str | None,
    score: dict[str, Any] | None, home: Path,
) -> None:  # fmt: skip
    registry.create(fields={
        "id": run_id, "app": "online-boutique", "seed": seed, "agent": "runbook", "backend": "twin",
        "clock": "stepped", "target": f"twin:{run_id}", "source": "api", "config_json": {},
        "home": home / run_id, "created_at": "2026-01-01T00:00:00+00:00",
    })  # fmt: skip
    registry.update(run_id, status=status, reason=reason, score=score)


def _fill(registry: Registry, homes: Path, *, live: bool = True) -> None:
    runs: list[tuple[str, int, str, str | None, dict[str, Any] | None]] = [
        ("a", 1, "finished", "completed", {"marathon_score": 50.0, "outcomes": [_outcome("ob-a", True)]}),
        ("b", 2, "finished", "completed", {"marathon_score": 70.0, "outcomes": [_outcome("ob-a", False)]}),
        ("c", 3, "stopped", "stopped", {"marathon_score": 100.0}),
        ("d", 4, "failed", "error", None),
        ("e", 5, "running", None, None),  # not ended: on no leaderboard
    ]
    runs = runs if live else runs[:-1]  # a server would find "e" left running, and interrupt it
    for run_id, seed, status, reason, score in runs:
        (homes / run_id).mkdir(parents=True)
        _register(registry, run_id, seed=seed, status=status, reason=reason, score=score, home=homes)


def test_the_registry_leaderboard_keeps_stopped_and_failed_runs_out_of_the_mean(
    registry_url: str, tmp_path: Path
) -> None:
    registry = Registry(registry_url)
    _fill(registry, tmp_path)
    assert [row.id for row in registry.ended()] == ["a", "b", "c", "d"]
    (row,) = leaderboard_rows(registry.ended())
    assert (row.n, row.seeds, row.mean, row.consistency) == (2, [1, 2], 60.0, 0.5)
    assert row.ci95 is not None and row.ci95.half_width == pytest.approx(12.706205 * 10.0, abs=1e-4)


def test_get_leaderboard_serves_the_rows_and_the_incomplete_runs(tmp_path: Path) -> None:
    data = tmp_path / "control"
    data.mkdir()
    url = f"sqlite:///{data / 'registry.sqlite'}"
    _fill(Registry(url), data / "runs", live=False)
    app = create_app(Settings(db_url=url, data_dir=data, token="t"))
    with TestClient(app) as client:
        board = client.get("/leaderboard").json()
    (row,) = board["rows"]
    assert (row["agent"], row["n"], row["seeds"], row["mean"]) == ("runbook", 2, [1, 2], 60.0)
    assert row["ci95"]["half_width"] == pytest.approx(127.06205, abs=1e-3)
    assert row["kinds"] == [{"catalog_id": "ob-a", "seeds": 2, "resolved": 1, "share": 0.5}]
    assert row["latest"]["report"] == "/runs/b/report"
    assert [(r["run_id"], r["status"]) for r in board["incomplete"]] == [("c", "stopped"), ("d", "failed")]


def test_the_leaderboard_command_prints_the_registry_table_and_counts_incomplete_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "control"
    data.mkdir()
    _fill(Registry(f"sqlite:///{data / 'registry.sqlite'}"), data / "runs")
    assert main(["leaderboard", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["app", "agent", "n", "seeds", "mean", "±", "95%", "CI", "consistency"]
    assert lines[1].split() == ["online-boutique", "runbook", "2", "1,2", "60.0", "±", "127.1", "0.50",
                                "(1", "kind)"]  # fmt: skip
    assert "incomplete, failed: 1 run (in no mean)" in lines
    assert "incomplete, stopped: 1 run (in no mean)" in lines

    assert main(["leaderboard", "--data", str(data), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rows"][0]["mean"] == 60.0


def test_the_leaderboard_command_refuses_a_data_directory_without_a_registry_and_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["leaderboard", "--data", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data" in err and "registry.sqlite" in err
    assert not (tmp_path / "nothing").exists()


def _bundle(directory: Path, *, run_id: str, seed: int, agent: str, handled: bool, started: str,
            reason: str = "completed", seal: bool = True) -> Path:  # fmt: skip
    """A one-fault run: handled end to end (score 100) or only correlated (33.3)."""
    diagnosis = RIGHT if handled else {"culprits": ["frontend"], "artifact": "config:frontend/env/PORT"}
    records: list[Record] = [
        sample_manifest(run_id=run_id, seed=seed, agent_name=agent),
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60),
        report(120, "INC-1", ["a1"], **diagnosis),
        act(250, "cartservice"),
        *probes("f1", [(120, False), (240, False), (360, True), (480, True)]),
        RunEnded(t=1800, reason=reason),
    ]
    return write_bundle(directory / run_id, records, seal=seal, runtime={"started_at": started})


def test_the_leaderboard_command_scores_sealed_bundles_and_a_seeds_latest_run_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundles = [
        # seed 2's later run comes first on the command line: the start time decides, not the order
        _bundle(tmp_path, run_id="r2-late", seed=2, agent="runbook", handled=False, started="2026-01-02"),
        _bundle(tmp_path, run_id="r1", seed=1, agent="runbook", handled=True, started="2026-01-01"),
        _bundle(tmp_path, run_id="r2-early", seed=2, agent="runbook", handled=True, started="2026-01-01"),
        _bundle(tmp_path, run_id="r3", seed=3, agent="runbook", handled=True, started="2026-01-03",
                reason="stopped"),
        _bundle(tmp_path, run_id="r4", seed=4, agent="runbook", handled=True, started="2026-01-04",
                seal=False),
        _bundle(tmp_path, run_id="n1", seed=1, agent="noop", handled=False, started="2026-01-01"),
    ]  # fmt: skip
    assert main(["leaderboard", "--json", "--bundles", *map(str, bundles)]) == 0
    document = json.loads(capsys.readouterr().out)
    runbook, noop = document["rows"]
    assert [(s["seed"], s["run_id"]) for s in runbook["counted"]] == [(1, "r1"), (2, "r2-late")]
    assert runbook["mean"] == pytest.approx((100.0 + 33.3) / 2)
    assert runbook["kinds"] == [{"catalog_id": "cat-f1", "seeds": 2, "resolved": 1, "share": 0.5}]
    assert (noop["n"], noop["ci95"], noop["mean"]) == (1, None, 33.3)
    assert [(r["run_id"], r["status"]) for r in document["incomplete"]] == [
        ("r3", "stopped"),
        ("r4", "partial"),
    ]

    assert main(["leaderboard", "--bundles", *map(str, bundles)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:7] == [
        "online-boutique",
        "runbook",
        "2",
        "1,2",
        "66.7",
        "±",
        "423.8",
    ]  # 12.706*66.7/2
    assert lines[2].split()[:7] == ["online-boutique", "noop", "1", "1", "33.3", "±", "n/a"]
    assert "incomplete, partial: 1 run (in no mean)" in lines


def test_a_bundle_that_does_not_verify_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path, run_id="r1", seed=1, agent="runbook", handled=True, started="2026-01-01")
    stream = bundle / "data" / "faults.jsonl"
    stream.write_bytes(stream.read_bytes().replace(b'"cat-f1"', b'"cat-f2"', 1))
    assert main(["leaderboard", "--bundles", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bundle) in err and "does not verify" in err


def test_the_leaderboard_help_shows_every_default_and_imports_nothing_heavy() -> None:
    probe = (
        "import sys; from orchestrator.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('orchestrator.api.app', 'orchestrator.api.leaderboard', 'orchestrator.score',"
        " 'sqlalchemy', 'fastapi', 'orchestrator.run.runner') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, "leaderboard", "--help"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert "HEAVY []" in done.stdout, done.stdout[-300:]
    for option in ("--bundles", "--json", "--data", "--db"):
        assert option in done.stdout
    assert done.stdout.count("(default") >= 4, done.stdout


def test_a_kind_repaired_but_never_located_is_resolved_neither_here_nor_in_the_seed_aggregate() -> None:
    from orchestrator.score.aggregate import KindOutcome, consistency_of, handled_end_to_end

    repaired_only = {**_outcome("ob-a", True), "b": 0}  # c = 1, yet the culprit was never named
    results = [_result("r1", 1, 50.0, outcomes=[repaired_only]), _result("r2", 2, 60.0, order=1,
               outcomes=[_outcome("ob-a", True)])]  # fmt: skip
    (row,) = leaderboard(results).rows
    (kind,) = row.kinds
    assert (kind.catalog_id, kind.seeds, kind.resolved) == ("ob-a", 2, 1)
    runs = [[KindOutcome("ob-a", "", "", handled_end_to_end(o["a"], o["b"], o["c"]))]
            for o in (repaired_only, _outcome("ob-a", True))]  # fmt: skip
    (same,) = consistency_of(runs)
    assert (same.seeds, same.resolved, same.share) == (kind.seeds, kind.resolved, kind.share)
