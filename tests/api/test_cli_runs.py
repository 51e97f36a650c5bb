"""Runs started from the command line are recorded in the control plane's registry: registered under the id of
their bundle (a repeat of the same reproducible run under ``<id>-2``), followed as they go, ended with their
score; the server then lists them, streams their events and serves their report. A registry that fails
mid-run costs the record, never the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from orchestrator.api.cli_runs import CliRecorder
from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import Registry
from orchestrator.bundle.reader import read_bundle
from orchestrator.run.config import make_config
from orchestrator.run.events import Boundary, Identified, Injected, Reverted
from tests.api.live import Server, events

SHORT = ["--faults", "2", "--injection-period", "360", "--observation-period", "240"]


def _cli_run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--app", "online-boutique", "--seed", "11",
         "--agent", "runbook", "--runs", str(tmp_path / "runs"), "--data", str(tmp_path / "control"),
         "--no-baseline", "--quiet", *SHORT, *extra],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip


def _bundle_of(stdout: str) -> Path:
    line = next(line for line in stdout.splitlines() if line.startswith("bundle: "))
    return Path(line.removeprefix("bundle: "))


@pytest.mark.slow
def test_a_command_line_run_is_in_the_registry_under_its_bundles_id_and_the_server_shows_it(
    tmp_path: Path,
) -> None:
    first = _cli_run(tmp_path)
    assert first.returncode == 0, first.stderr
    bundle = _bundle_of(first.stdout)
    run_id = read_bundle(bundle).manifest.run_id
    assert bundle.parent.name == run_id

    registry = Registry(f"sqlite:///{tmp_path / 'control' / 'registry.sqlite'}")
    row = registry.get(run_id)
    assert row is not None
    assert (row.status, row.source, row.reason, row.runner_run_id) == ("finished", "cli", "completed", run_id)
    score = json.loads((bundle.parent / "score.json").read_text(encoding="utf-8"))
    assert row.marathon_score == score["marathon_score"]
    assert row.invocations == row.boundaries == row.boundary > 0
    assert (row.home / RUN_DIR).resolve() == bundle.parent.resolve()
    assert f"run: {run_id} " in first.stderr

    again = _cli_run(tmp_path)  # the same reproducible run again: same bundle identity, its own registry id
    assert again.returncode == 0, again.stderr
    repeat = _bundle_of(again.stdout)
    assert read_bundle(repeat).manifest.run_id == run_id
    second = registry.get(f"{run_id}-2")
    assert second is not None and second.status == "finished"
    assert (second.home / RUN_DIR).resolve() == repeat.parent.resolve()

    live = Server(data=tmp_path / "control").start()
    try:
        with live.client() as client:
            listed = client.get("/runs", params={"limit": 10}).json()["runs"]
            assert [(r["id"], r["source"]) for r in listed] == [(f"{run_id}-2", "cli"), (run_id, "cli")]
            seen = list(events(client, run_id))
            kinds = [e["type"] for e in seen]
            assert kinds[0] == "started" and kinds[-1] == "finished" and seen[-1]["status"] == "finished"
            assert kinds.count("boundary") == row.boundaries and "injected" in kinds and "service" in kinds
            report = client.get(f"/runs/{run_id}/report")
            assert report.status_code == 200 and run_id in report.text
    finally:
        live.stop()


def test_a_registry_that_fails_mid_run_is_warned_about_once_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = Registry(f"sqlite:///{tmp_path / 'registry.sqlite'}")
    config = make_config(app="online-boutique", seed=3, agent="noop", runs_root=tmp_path / "runs")
    recorder = CliRecorder(registry, data_dir=tmp_path / "control", config=config)
    run_dir = tmp_path / "runs" / "online-boutique-s3-noop-0123456789ab"
    recorder.handle(Identified(run_id=run_dir.name, run_dir=str(run_dir)))
    assert recorder.run_id == run_dir.name
    recorder.handle(Injected(fault_id="f000", catalog_id="ob-x", t=120.0, category="code-bug", target="cart"))
    row = registry.get(run_dir.name)
    assert row is not None and row.status == "running" and row.active_faults == ["f000"]

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OperationalError("UPDATE runs", {}, Exception("database is locked"))

    registry.update = refuse  # type: ignore[method-assign]
    recorder.handle(Reverted(fault_id="f000", t=360.0, outcome="reverted"))
    recorder.handle(Boundary(k=3, of=15, t=360.0))
    recorder.failed(RuntimeError("boom"))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "unrecorded" in line]
    assert len(warnings) == 1 and "database is locked" in warnings[0]


def test_a_run_that_fails_is_recorded_failed_with_its_error(tmp_path: Path) -> None:
    registry = Registry(f"sqlite:///{tmp_path / 'registry.sqlite'}")
    config = make_config(app="online-boutique", seed=3, agent="noop", runs_root=tmp_path / "runs")
    recorder = CliRecorder(registry, data_dir=tmp_path / "control", config=config)
    run_dir = tmp_path / "runs" / "online-boutique-s3-noop-0123456789ab"
    recorder.handle(Identified(run_id=run_dir.name, run_dir=str(run_dir)))
    recorder.handle(Injected(fault_id="f001", catalog_id="ob-x", t=120.0, category="code-bug", target="cart"))
    recorder.failed(RuntimeError("the twin stopped answering"))
    row = registry.get(run_dir.name)
    assert row is not None
    assert (row.status, row.reason, row.error) == ("failed", "error", "the twin stopped answering")
    assert row.active_faults == ["f001"] and row.ended_at is not None
    kinds = [json.loads(line)["type"] for line in (row.home / "events.jsonl").read_text().splitlines()]
    assert kinds == ["started", "injected", "finished"]
