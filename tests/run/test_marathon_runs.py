"""Whole marathons on the stepped twin with a real Prometheus: end to end, byte-for-byte repeatable,
budgets enforced, and a clean early stop."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.verify import verify_bundle
from orchestrator.run.config import RunConfig, make_config
from orchestrator.run.events import Boundary, RunEvent
from orchestrator.run.plan import make_plan
from orchestrator.run.runner import RunResult, run_marathon
from orchestrator.twin.apiserver.kubeconfig import read_credentials
from tests.processes import running_with, unique_sleep

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]
AGENT = Path(__file__).with_name("bash_agent.sh")
SHORT = {
    "app": "online-boutique",
    "seed": 5,
    "faults": 6,
    "delta_s": 60,
    "budget_s": 20.0,
    "injection_period_s": 600,
    "observation_period_s": 300,
    "min_duration_s": 120,
    "max_duration_s": 300,
    "quiet": True,
}


def _config(tmp: Path, out: str, **overrides: Any) -> RunConfig:
    fields = {**SHORT, "agent_cmd": f"bash {AGENT}", "runs_root": tmp / "runs", "out": tmp / out, **overrides}
    return make_config(**fields)


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunResult, RunResult]]:
    if shutil.which("jq") is None or shutil.which("curl") is None:
        pytest.skip("the bash agent needs jq and curl")
    tmp = tmp_path_factory.mktemp("marathon")
    first = run_marathon(_config(tmp, "first"))
    second = run_marathon(_config(tmp, "second"))
    yield first, second


def test_a_short_run_with_a_bash_agent_is_sealed_journaled_and_scored(
    twice: tuple[RunResult, RunResult],
) -> None:
    result = twice[0]
    assert result.reason == "completed"
    assert verify_bundle(result.bundle_dir).ok
    bundle = read_bundle(result.bundle_dir)
    assert [i.n for i in bundle.invocations] == list(range(1, 16))
    assert [i.start_s for i in bundle.invocations][:1] >= [60.0]
    assert len(bundle.schedule) == len(bundle.injected) > 0
    reverted = {r.fault_id for r in bundle.reverted if r.outcome != "failed"}
    failed = {f.fault_id for f in bundle.failed}
    assert {f.fault_id for f in bundle.injected} <= reverted | failed
    assert bundle.ended is not None and bundle.ended.reason == "completed"
    assert bundle.ended.t >= 900.0
    assert len(bundle.service) >= 900 // 15
    assert bundle.probes
    assert bundle.alerts
    planned = make_plan(_config(result.run_dir.parent, "unused")).schedule.decoys
    assert planned and [(d.index, d.change, d.target) for d in bundle.decoys] == [
        (d.index, d.change, d.target) for d in planned
    ]
    assert all(d.workload.name == d.target for d in bundle.decoys)
    assert bundle.rule_failures == ()  # a healthy run: a summary naming every rule, no failure
    pack = make_plan(_config(result.run_dir.parent, "unused")).rules
    assert [h.rule for h in bundle.rule_health] == [rule.name for rule in pack.rules]
    assert all(h.failures == 0 and h.evaluations >= 15 for h in bundle.rule_health)
    seen = (result.run_dir / "workspace" / "seen.txt").read_text().splitlines()
    assert seen[0] == "invocation 1 of online-boutique in online-boutique"
    assert len(seen) == 15
    reports = [c for c in bundle.tool_calls if c.tool == "incident_report"]
    assert reports and all(c.decision == "allowed" for c in reports)
    assert len(bundle.incident_reports) == len(reports)
    assert result.score["faults"] == len(bundle.injected) - len(failed)
    assert result.score["degradation_level"] is not None
    assert json.loads((result.run_dir / "score.json").read_text()) == result.score


def test_the_same_seed_gives_identical_data_files_and_score(twice: tuple[RunResult, RunResult]) -> None:
    first, second = twice
    assert first.run_id == second.run_id
    names = sorted(p.name for p in (first.bundle_dir / "data").iterdir())
    assert names == sorted(p.name for p in (second.bundle_dir / "data").iterdir())
    for name in names:
        if name == "runtime.json":
            continue
        left = (first.bundle_dir / "data" / name).read_bytes()
        right = (second.bundle_dir / "data" / name).read_bytes()
        assert left == right, f"{name} differs between two runs of the same seed"
    assert (first.run_dir / "score.json").read_bytes() == (second.run_dir / "score.json").read_bytes()


def test_the_twins_credentials_reach_no_file_of_the_bundle(twice: tuple[RunResult, RunResult]) -> None:
    for result in twice:
        credentials = read_credentials(result.run_dir / "kubeconfig")
        secrets = [credentials.token.encode(), base64.b64encode(credentials.ca_pem)]
        files = [p for p in result.bundle_dir.rglob("*") if p.is_file()]
        assert len(files) > 5
        leaked = [(p.name, s[:8]) for p in files for s in secrets if s in p.read_bytes()]
        assert leaked == []
    first, second = (read_credentials(result.run_dir / "kubeconfig") for result in twice)
    assert first.token != second.token and first.ca_pem != second.ca_pem  # same seed, other credentials


def test_the_no_action_baseline_is_computed_once_and_cached(twice: tuple[RunResult, RunResult]) -> None:
    baselines = twice[0].run_dir.parent / "runs" / ".baselines"
    kept = [p for p in baselines.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(kept) == 1
    baseline = read_bundle(kept[0] / "bundle")
    assert baseline.manifest.agent_name == "noop"
    assert not baseline.invocations and not baseline.tool_calls
    assert len(baseline.injected) == len(read_bundle(twice[0].bundle_dir).injected)


def test_an_agent_sleeping_past_its_budget_is_killed_and_the_next_invocation_is_on_time(
    tmp_path: Path,
) -> None:
    marker = unique_sleep()  # no other test run on the machine has children of this name
    sleeper = f"{marker} & echo started >> children.txt; sleep 120"
    config = _config(
        tmp_path, "sleepy", agent_cmd=f"bash -c '{sleeper}'", faults=0, delta_s=20, budget_s=2.0,
        injection_period_s=60, observation_period_s=40, baseline=False,
    )  # fmt: skip
    result = run_marathon(config)
    bundle = read_bundle(result.bundle_dir)
    assert [(i.n, i.start_s, i.timed_out, i.exit_code) for i in bundle.invocations] == [
        (n, 20.0 * n, True, None) for n in range(1, 6)
    ]
    children = (result.run_dir / "workspace" / "children.txt").read_text().split()
    assert len(children) == 5  # each invocation left a child behind...
    assert running_with(marker) == []  # ...and none of them outlived its invocation
    assert verify_bundle(result.bundle_dir).ok


class _TerminateAtBoundary:
    def __init__(self, k: int) -> None:
        self.k = k

    def handle(self, event: RunEvent) -> None:
        if isinstance(event, Boundary) and event.k == self.k:
            os.kill(os.getpid(), signal.SIGTERM)


def test_sigterm_stops_the_run_early_reverting_every_fault_and_sealing(tmp_path: Path) -> None:
    config = _config(tmp_path, "stopped", agent_cmd="true", faults=8, baseline=True, min_duration_s=300,
                     max_duration_s=600)  # fmt: skip
    result = run_marathon(config, events=_TerminateAtBoundary(4))
    assert result.reason == "stopped"
    bundle = read_bundle(result.bundle_dir)
    assert len(bundle.invocations) == 4
    assert bundle.ended is not None and bundle.ended.reason == "stopped"
    live = {f.fault_id for f in bundle.injected} - {f.fault_id for f in bundle.failed}
    assert live, "the schedule should have injected faults before the stop"
    closed = {r.fault_id for r in bundle.reverted if r.outcome != "failed"}
    assert live <= closed
    assert verify_bundle(result.bundle_dir).ok
    assert "marathon_score" in result.score
    assert result.score["degradation_level"] is None  # a run cut short is not compared with a whole one
    baselines = tmp_path / "runs" / ".baselines"
    assert not [p for p in baselines.iterdir() if p.is_dir()], "a cancelled baseline must not be kept"


def test_a_realtime_twin_run_invokes_the_agent_at_each_boundary_once_its_world_gets_there(
    tmp_path: Path,
) -> None:
    config = _config(
        tmp_path, "realtime", agent_cmd="true", clock="realtime", speed=60.0, faults=1, delta_s=60,
        budget_s=5.0, injection_period_s=120, observation_period_s=60, baseline=False,
    )  # fmt: skip
    result = run_marathon(config)
    bundle = read_bundle(result.bundle_dir)
    starts = [i.start_s for i in bundle.invocations]
    assert len(starts) == 3
    assert all(start >= 60.0 * n for n, start in enumerate(starts, start=1))
    assert starts == sorted(starts)
    assert bundle.manifest.schedule_params["clock"] == "realtime"
    assert verify_bundle(result.bundle_dir).ok


def test_faults_are_injected_and_reverted_at_their_drawn_seconds_between_boundaries(tmp_path: Path) -> None:
    # Four-minute faults last 240 s in the bundle (not the 360 s of the boundaries around them), each
    # injected at its scheduled second, though the agent is invoked only every 120 s.
    config = _config(
        tmp_path, "exact", agent_cmd="true", faults=4, delta_s=120, budget_s=5.0, injection_period_s=600,
        observation_period_s=360, min_duration_s=240, max_duration_s=240, baseline=False,
    )  # fmt: skip
    planned = {a.index: a for a in make_plan(config).schedule.activations}
    assert any(a.at_s % 120 for a in planned.values())
    result = run_marathon(config)
    bundle = read_bundle(result.bundle_dir)
    injected = {f.fault_id: f for f in bundle.injected}
    reverted = {r.fault_id: r for r in bundle.reverted}
    assert len(injected) == len(planned) > 0 and not bundle.failed
    for fault_id, fault in injected.items():
        activation = planned[int(fault_id.removeprefix("f"))]
        assert fault.inject_s == float(activation.at_s)
        assert reverted[fault_id].t - fault.inject_s == 240.0
    assert [i.start_s for i in bundle.invocations] == [120.0 * n for n in range(1, 9)]


def test_a_realtime_world_gets_the_changes_that_fall_due_while_the_agent_runs(tmp_path: Path) -> None:
    # The world moves while the agent sleeps through most of each interval: a fault scheduled during an
    # invocation is injected (or reverted) during it, not once the agent is done.
    config = _config(
        tmp_path, "realtime-exact", agent_cmd="sleep 2", clock="realtime", speed=20.0, faults=8, delta_s=60,
        budget_s=2.5, injection_period_s=300, observation_period_s=120, min_duration_s=60,
        max_duration_s=90, baseline=False,
    )  # fmt: skip
    result = run_marathon(config)
    bundle = read_bundle(result.bundle_dir)
    planned = {f"f{a.index:03d}": a for a in make_plan(config).schedule.activations}
    windows = [(i.start_s, i.end_s) for i in bundle.invocations]
    changes = [(planned[f.fault_id].at_s, f.inject_s) for f in bundle.injected]
    changes += [(planned[r.fault_id].end_s, r.t) for r in bundle.reverted if r.fault_id in planned]
    # A change waits for the one before it to settle, so not every one due meanwhile makes it in time.
    during = [(due, done) for due, done in changes for start, end in windows if start < due <= done < end]
    assert during, "changes falling due while the agent runs should be applied while it runs"
    assert all(done >= due for due, done in changes)
    assert verify_bundle(result.bundle_dir).ok
