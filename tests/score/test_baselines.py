"""Scoring a bundle again finds the run's own no-action baseline, and refuses what it cannot verify."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.records import Record, RunEnded, RunManifest, ServiceSample
from orchestrator.cli import build_parser
from orchestrator.run.baseline import BASELINES
from orchestrator.score.baselines import (
    BASELINES_DIR,
    baseline_mismatch,
    find_baseline,
    noop_command,
    search_roots,
)
from orchestrator.score.scorecard import score_bundle
from tests.score.scenario import act, alert, fault, probes, report

PARAMS: dict[str, Any] = {
    "fault_count": 4,
    "injection_period_s": 3600,
    "observation_period_s": 1800,
    "min_duration_s": 240,
    "max_duration_s": 720,
    "max_concurrent": None,
    "exclusive_culprits": True,
    "delta_s": 120,
    "ramp": 4.0,
    "schedule_sha256": "c" * 64,
    "admission_sha256": "a" * 64,
    "backend": "twin",
    "clock": "stepped",
    "sample_step_s": 15,
    "role": "scored",
}


def _manifest(*, role: str = "scored", seed: int = 42, **params: Any) -> RunManifest:
    agent = "noop" if role == "baseline" else "runbook"
    return sample_manifest(
        run_id=f"online-boutique-s{seed}-{agent}", seed=seed, agent_name=agent,
        schedule_params={**PARAMS, "role": role, **params},
    )  # fmt: skip


def _samples(error: float) -> list[Record]:
    return [ServiceSample(t=60.0 * n, q=20.0, e=error if 5 <= n <= 25 else 0.0, l=0.05) for n in range(31)]


def _write(path: Path, manifest: RunManifest, records: list[Record], *, reason: str = "completed") -> Path:
    return write_bundle(path, [manifest, *records, RunEnded(t=1800.0, reason=reason)])


def _scored_run(runs: Path) -> Path:
    records: list[Record] = [
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60, service="cartservice"),
        report(120, "INC-1", ["a1"], culprits=["cartservice"], artifact="config:cartservice/env/REDIS_ADDR"),
        act(130, "cartservice"),
        *probes("f1", [(120, False), (240, True)]),
        *_samples(0.1),
    ]
    return _write(runs / "online-boutique-s42-runbook-0123" / "bundle", _manifest(), records)


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).parents[2]
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *argv],
        capture_output=True, text=True, check=False, cwd=cwd, env={"PYTHONPATH": str(root)},
    )  # fmt: skip


def test_the_score_package_looks_where_the_runner_caches_baselines() -> None:
    assert BASELINES_DIR == BASELINES


def test_a_baseline_of_the_same_world_matches_whatever_its_role_and_clock() -> None:
    run = _manifest()
    assert baseline_mismatch(run, _manifest(role="baseline")) is None
    assert baseline_mismatch(run, _manifest(role="baseline", clock="realtime")) is None


@pytest.mark.parametrize(
    ("theirs", "named"),
    [
        (_manifest(role="scored"), "schedule_params.role = 'scored', not a no-action baseline"),
        (_manifest(role="baseline", seed=43), "seed = 43 (the run has 42)"),
        (
            _manifest(role="baseline", schedule_sha256="d" * 64),
            "schedule_params.schedule_sha256 = 'dddddddddddd…' (the run has 'cccccccccccc…')",
        ),
        (_manifest(role="baseline", sample_step_s=30), "schedule_params.sample_step_s = 30 (the run has 15)"),
        (
            _manifest(role="baseline").model_copy(update={"code_sha256": "9" * 64}),
            "code_sha256 = '999999999999…' (the run has '222222222222…')",
        ),
        (
            _manifest(role="baseline").model_copy(update={"rule_pack_sha256": "8" * 64}),
            "rule_pack_sha256 = '888888888888…' (the run has '111111111111…')",
        ),
    ],
)
def test_a_baseline_of_another_world_is_named_by_the_first_fact_that_differs(
    theirs: RunManifest, named: str
) -> None:
    assert baseline_mismatch(_manifest(), theirs) == named


def test_score_finds_the_runs_own_baseline_and_prints_the_degradation_it_gives(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    bundle = _scored_run(runs)
    cache = runs / BASELINES_DIR
    # Decoys sorted before the real one: another seed, another schedule, and a baseline cut short.
    _write(cache / "a-other-seed" / "bundle", _manifest(role="baseline", seed=7), _samples(0.9))
    _write(
        cache / "b-other-schedule" / "bundle",
        _manifest(role="baseline", schedule_sha256="e" * 64),
        _samples(0.9),
    )
    _write(cache / "c-stopped" / "bundle", _manifest(role="baseline"), _samples(0.9), reason="stopped")
    own = _write(cache / "d-own" / "bundle", _manifest(role="baseline"), _samples(0.3))

    expected = score_bundle(read_bundle(bundle), read_bundle(own)).degradation_level
    assert expected is not None and 0 < expected < 100
    done = _cli("score", str(bundle), "--json", cwd=tmp_path / "..")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["degradation_level"] == round(expected, 3)
    assert done.stderr.strip() == f"marathon: degradation level against the no-action baseline {own}"

    search = find_baseline(read_bundle(bundle).manifest, roots=search_roots(bundle, None))
    assert search.found == own


def test_a_baseline_under_the_runs_option_is_found_when_the_bundle_lives_elsewhere(tmp_path: Path) -> None:
    bundle = _scored_run(tmp_path / "elsewhere")
    own = _write(
        tmp_path / "runs" / BASELINES_DIR / "own" / "bundle", _manifest(role="baseline"), _samples(0.3)
    )
    done = _cli("score", str(bundle), "--json", cwd=tmp_path)  # --runs defaults to ./runs
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["degradation_level"] is not None
    assert str(own) in done.stderr


def test_without_a_baseline_one_line_says_how_to_make_it_and_the_score_is_still_printed(
    tmp_path: Path,
) -> None:
    bundle = _scored_run(tmp_path / "runs")
    done = _cli("score", str(bundle), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no no-action baseline" in lines[0] and "--baseline PATH" in lines[0]
    assert noop_command(read_bundle(bundle).manifest, runs=(tmp_path / "runs").resolve()) in lines[0]
    assert any(
        line.split() == ["│", "Degradation", "level", "│", "-", "│"] for line in done.stdout.splitlines()
    )
    assert "Marathon-Score" in done.stdout


def test_the_suggested_command_runs_the_noop_agent_on_the_same_schedule_parameters(tmp_path: Path) -> None:
    manifest = _manifest(max_concurrent=3, exclusive_culprits=False, fault_count=7, delta_s=60)
    words = noop_command(manifest, runs=tmp_path / "runs").split()
    assert words[:2] == ["marathon", "run"]
    args = build_parser("run").parse_args(words[1:])
    assert (args.app, args.seed, args.agent) == ("online-boutique", 42, "noop")
    assert (args.faults, args.delta, args.max_concurrent, args.shared_culprits) == (7, 60, 3, True)
    assert (args.injection_period, args.observation_period) == (3600, 1800)
    assert args.runs == tmp_path / "runs"


def test_the_suggested_command_of_a_run_without_a_cap_says_so() -> None:
    # Without the flag the command would run the app's default cap, another schedule.
    words = noop_command(_manifest(max_concurrent=None), runs=Path("runs")).split()
    assert build_parser("run").parse_args(words[1:]).max_concurrent == "none"


def test_a_baseline_made_by_other_code_is_used_only_without_the_runs_own_and_with_a_warning(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    bundle = _scored_run(runs)
    other = _manifest(role="baseline").model_copy(update={"code_sha256": "9" * 64})
    older = _write(runs / BASELINES_DIR / "a-older-code" / "bundle", other, _samples(0.6))
    done = _cli("score", str(bundle), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    level = score_bundle(read_bundle(bundle), read_bundle(older)).degradation_level
    assert level is not None and json.loads(done.stdout)["degradation_level"] == round(level, 3)
    assert done.stderr.startswith(
        f"marathon: warning: degradation level against the no-action baseline {older}"
    )
    assert (
        "whose manifest records code '999999999999…' where the run's records '222222222222…'" in done.stderr
    )

    own = _write(runs / BASELINES_DIR / "b-own" / "bundle", _manifest(role="baseline"), _samples(0.3))
    search = find_baseline(read_bundle(bundle).manifest, roots=search_roots(bundle, None))
    assert (search.found, search.code_differs) == (own, "")


def test_a_run_that_did_not_complete_is_not_compared_with_a_whole_baseline_as_the_run_itself_does(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    bundle = _write(runs / "stopped-run" / "bundle", _manifest(), _samples(0.1), reason="stopped")
    _write(runs / BASELINES_DIR / "own" / "bundle", _manifest(role="baseline"), _samples(0.3))
    done = _cli("score", str(bundle), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["degradation_level"] is None
    assert "did not complete (stopped), so it has no baseline" in done.stderr


def test_a_run_on_a_real_cluster_is_not_compared_with_a_twin_baseline(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    bundle = _write(runs / "kube-run" / "bundle", _manifest(backend="kube"), _samples(0.1))
    _write(runs / BASELINES_DIR / "own" / "bundle", _manifest(role="baseline"), _samples(0.3))
    search = find_baseline(read_bundle(bundle).manifest, roots=search_roots(bundle, None))
    assert search.found is None and "real cluster" in search.reason


def _cut_in_half(bundle: Path) -> None:
    journal = bundle / "data" / "agent.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("command", ["score", "report"])
def test_a_bundle_whose_agent_journal_was_cut_in_half_is_refused_in_one_line(
    tmp_path: Path, command: str
) -> None:
    bundle = _scored_run(tmp_path / "runs")
    _cut_in_half(bundle)
    done = _cli(command, str(bundle), "-o" if command == "report" else "--json", *(
        [str(tmp_path / "r.html")] if command == "report" else []), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not verify" in lines[0] and "--no-verify" in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_no_verify_scores_a_cut_bundle_and_says_so_on_the_result(tmp_path: Path) -> None:
    bundle = _scored_run(tmp_path / "runs")
    _cut_in_half(bundle)
    done = _cli("score", str(bundle), "--no-verify", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("NOT VERIFIED (--no-verify): DOES NOT VERIFY (") and "data/agent.jsonl" in first
    page = tmp_path / "r.html"
    done = _cli("report", str(bundle), "--no-verify", "-o", str(page), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '<p class="warning">Integrity: NOT CHECKED BEFORE SCORING (--no-verify)' in page.read_text()


def test_an_unsealed_journal_is_refused_unless_no_verify(tmp_path: Path) -> None:
    journal = write_bundle(
        tmp_path / "journal", [_manifest(), *_samples(0.1), RunEnded(t=1800.0)], seal=False
    )
    done = _cli("score", str(journal), cwd=tmp_path)
    assert done.returncode == 1 and "not sealed" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert _cli("score", str(journal), "--no-verify", cwd=tmp_path).returncode == 0
