"""The nightly matrix: its file is validated with the field named, expands app x agent x seed;
``marathon nightly --once`` runs it as one night into the registry, telling each run's start and end and
ending with a table; ``marathon nightly`` keeps it on its schedule until interrupted; ``GET /nightly`` lists
the nights, newest first."""

from __future__ import annotations

import contextlib
import queue
import re
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from orchestrator.api.app import Settings, create_app
from orchestrator.api.metrics import Metrics
from orchestrator.api.models import RunRequest
from orchestrator.api.nightly import (
    JOB_ID,
    Cell,
    Tick,
    load_nightly,
    matrix,
    next_run_at,
    start_scheduler,
    stop_scheduler,
    summary_table,
    tick_line,
)
from orchestrator.api.nightly_routes import Nightly, night_history
from orchestrator.api.registry import Registry
from orchestrator.api.runs import RunManager
from orchestrator.cli import main
from orchestrator.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
LINE_TIMEOUT_S = 120.0
TINY = {"faults": 2, "injection_period_s": 120, "observation_period_s": 120}
TICK = re.compile(
    r"^(?P<kind>started|ended) +(?P<app>\S+)  (?P<agent>\S+)  seed (?P<seed>\d+)  run (?P<run>\S+)  "
    r"(?P<status>\S+)  score (?P<score>\S+)  wall (?P<wall>[\d.]+)s  (?P<done>\d+)/(?P<total>\d+) done$"
)


def _write(path: Path, document: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_the_shipped_nightly_file_is_valid_and_expands_to_every_cell() -> None:
    config = load_nightly(REPO / "deploy" / "nightly.yaml")
    cells = matrix(config)
    assert len(cells) == len(config.apps) * len(config.agents) * len(config.seeds)
    assert {(c.app, c.agent, c.seed) for c in cells} == {
        (a, g, s) for a in config.apps for g in config.agents for s in config.seeds
    }


def test_a_bad_nightly_file_is_refused_naming_file_field_and_value(tmp_path: Path) -> None:
    document = {"cron": "every night", "apps": ["online-boutique"], "agents": ["noop"], "seeds": [1],
                "concurrency": 0}  # fmt: skip
    path = _write(tmp_path / "n.yaml", document)
    with pytest.raises(ConfigError) as caught:
        load_nightly(path)
    fields = {p.field for p in caught.value.problems}
    assert fields == {"cron", "concurrency"}
    assert all(p.file == str(path) for p in caught.value.problems)
    assert "'every night'" in str(caught.value)


def test_every_option_of_nightly_shows_its_default_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["nightly", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--once run the matrix now, once, and exit (default: run it on its cron schedule until" in text
    assert "--config CONFIG the matrix file (default: deploy/nightly.yaml)" in text
    assert "--data DATA where run homes live (default: runs/control)" in text
    assert "--db DB SQLAlchemy URL of the run registry (default: SQLite in the data directory" in text


def _request(agent: str, seed: int) -> RunRequest:
    return RunRequest(app="online-boutique", agent=agent, seed=seed)


def test_progress_lines_and_the_summary_table_name_app_agent_seed_run_and_score(tmp_path: Path) -> None:
    bundle = tmp_path / "runs" / "r1" / "run" / "bundle"
    ran = Cell(_request("noop", 3), "r1", "finished", score=71.25, wall_s=12.34, bundle=bundle)
    refused = Cell(_request("nobody", 3), None, "refused", "not a known agent")
    started = Cell(_request("noop", 3), "r1", "running")
    assert tick_line(Tick("started", started, 0, 2)) == (
        "started  online-boutique  noop  seed 3  run r1  running  score -  wall 0.0s  0/2 done"
    )
    assert tick_line(Tick("ended", ran, 1, 2)) == (
        "ended    online-boutique  noop  seed 3  run r1  finished  score 71.2  wall 12.3s  1/2 done"
    )
    assert TICK.match(tick_line(Tick("ended", refused, 2, 2)))
    table = summary_table([ran, refused]).splitlines()
    assert table[0].split() == ["app", "agent", "seed", "status", "score", "report", "bundle"]
    assert table[1].split() == ["online-boutique", "noop", "3", "finished", "71.2", "/runs/r1/report",
                                str(bundle)]  # fmt: skip
    assert table[2].split() == ["online-boutique", "nobody", "3", "refused", "-", "-", "-"]
    assert table[3] == "2 runs, 1 failed"
    assert summary_table([ran]).splitlines()[-1] == "1 run, 0 failed"


def _fields(run_id: str, *, source: str, created_at: str, seed: int = 1) -> dict[str, Any]:
    return {"id": run_id, "app": "online-boutique", "seed": seed, "agent": "noop", "backend": "twin",
            "clock": "stepped", "target": f"twin:{run_id}", "source": source, "config_json": {},
            "home": Path("/nowhere") / run_id, "created_at": created_at}  # fmt: skip


def test_nights_are_listed_newest_first_each_with_its_runs_and_bounded(registry_url: str) -> None:
    registry = Registry(registry_url)
    first, second = "2026-12-01T02:00:00.000Z", "2026-12-02T02:00:00.000Z"
    rows = [  # id, source, created_at
        ("a1", f"nightly {first}", "2026-12-01T02:00:01+00:00"),
        ("api", "api", "2026-12-01T03:00:00+00:00"),
        ("bare", "nightly", "2026-12-01T04:00:00+00:00"),  # an older release's --once: no night
        ("a2", f"nightly {first}", "2026-12-01T02:00:02+00:00"),
        ("old", "nightly 2026-11-30", "2026-11-30T02:00:05+00:00"),  # an older release's scheduled night
        ("b1", f"nightly {second}", "2026-12-02T02:00:01+00:00"),
    ]
    for seed, (run_id, source, created) in enumerate(rows):
        registry.create(fields=_fields(run_id, source=source, created_at=created, seed=seed))
    registry.update("a1", status="finished", score={"marathon_score": 42.5})
    registry.update("a2", status="failed")

    history = night_history(registry)
    assert [(n.night, n.started_at, [r.run_id for r in n.runs]) for n in history] == [
        (second, second, ["b1"]),
        ("2026-11-30", "2026-11-30T02:00:05+00:00", ["old"]),  # registered after the first night began
        (first, first, ["a1", "a2"]),
    ]
    a1, a2 = history[2].runs
    assert a1.model_dump() == {"run_id": "a1", "app": "online-boutique", "agent": "noop", "seed": 0,
                               "status": "finished", "marathon_score": 42.5}  # fmt: skip
    assert (a2.status, a2.marathon_score, a2.seed) == ("failed", None, 3)
    assert [n.night for n in night_history(registry, limit=1)] == [second]


def _write(path: Path, document: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _night(config: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "nightly", "--once", "--config", str(config),
         "--data", str(data)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _night_name(stdout: str) -> str:
    named = re.match(r"night (\S+): ", stdout)
    assert named is not None, stdout
    return named.group(1)


def _ticks(stdout: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in map(TICK.match, stdout.splitlines()) if m is not None]


@pytest.mark.slow
def test_each_nightly_once_is_one_night_told_run_by_run_and_listed_newest_first(tmp_path: Path) -> None:
    data = tmp_path / "control"
    matrix_of = {"cron": "0 2 * * *", "apps": ["online-boutique"], "concurrency": 2, "baseline": False,
                 "schedule": TINY}  # fmt: skip
    first = _night(_write(tmp_path / "first.yaml", {**matrix_of, "agents": ["noop", "runbook", "nobody"],
                                                     "seeds": [3]}), data)  # fmt: skip
    assert first.returncode == 1, first.stdout + first.stderr  # a refused cell is a failed one
    assert "nobody seed 3: " in first.stderr and "not a known agent" in first.stderr
    lines = first.stdout.splitlines()
    assert re.match(r"night \S+: 3 runs, 2 at once", lines[0]), lines[0]
    first_night = _night_name(first.stdout)

    ticks = _ticks(first.stdout)
    started = {t["agent"]: t for t in ticks if t["kind"] == "started"}
    ended = {t["agent"]: t for t in ticks if t["kind"] == "ended"}
    assert sorted(started) == ["noop", "runbook"] and sorted(ended) == ["nobody", "noop", "runbook"]
    assert all(t["status"] == "running" and t["score"] == "-" for t in started.values())
    assert [t["done"] for t in ticks if t["kind"] == "ended"] == ["1", "2", "3"]
    assert all(t["total"] == "3" and t["seed"] == "3" for t in ticks)
    assert (ended["nobody"]["status"], ended["nobody"]["run"]) == ("refused", "-")
    for agent in ("noop", "runbook"):
        assert ended[agent]["run"] == started[agent]["run"]
        assert ended[agent]["status"] == "finished" and float(ended[agent]["wall"]) > 0
        float(ended[agent]["score"])
    run_ids = {agent: ended[agent]["run"] for agent in ("noop", "runbook")}

    table = lines[lines.index(next(line for line in lines if line.startswith("app "))) :]
    assert table[0].split() == ["app", "agent", "seed", "status", "score", "report", "bundle"]
    body = {row.split()[1]: row.split() for row in table[1:-1]}
    assert sorted(body) == ["nobody", "noop", "runbook"]
    for agent, run_id in run_ids.items():
        app, _, seed, status, score, report, bundle = body[agent]
        assert (app, seed, status, score, report) == (
            "online-boutique",
            "3",
            "finished",
            ended[agent]["score"],
            f"/runs/{run_id}/report",
        )
        assert Path(bundle).is_dir() and Path(bundle).is_relative_to(data.resolve() / "runs" / run_id)
    assert body["nobody"][3:] == ["refused", "-", "-", "-"]
    assert table[-1] == "3 runs, 1 failed"

    second = _night(_write(tmp_path / "second.yaml", {**matrix_of, "agents": ["noop"], "seeds": [4]}), data)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.splitlines()[-1] == "1 run, 0 failed"
    (second_run,) = [t for t in _ticks(second.stdout) if t["kind"] == "ended"]

    settings = Settings(db_url=f"sqlite:///{data / 'registry.sqlite'}", data_dir=data, token=None)
    with TestClient(create_app(settings)) as client:
        nightly = client.get("/nightly").json()
        board = client.get("/leaderboard").json()
    assert set(nightly) == {"next_run_at", "nights"} and nightly["next_run_at"] is None
    assert [n["night"] for n in nightly["nights"]] == [_night_name(second.stdout), first_night]
    newest, oldest = nightly["nights"]
    assert newest["started_at"] == newest["night"] and oldest["started_at"] == first_night
    assert newest["runs"] == [{"run_id": second_run["run"], "app": "online-boutique", "agent": "noop",
                               "seed": 4, "status": "finished",
                               "marathon_score": float(second_run["score"])}]  # fmt: skip
    assert [(r["agent"], r["run_id"], r["status"]) for r in oldest["runs"]] == [
        ("noop", run_ids["noop"], "finished"),
        ("runbook", run_ids["runbook"], "finished"),
    ]
    scores = [f"{r['marathon_score']:.1f}" for r in oldest["runs"]]
    assert scores == [ended["noop"]["score"], ended["runbook"]["score"]]
    assert {(row["app"], row["agent"]) for row in board["rows"]} == {
        ("online-boutique", "noop"),
        ("online-boutique", "runbook"),
    }


class Lines:
    """A process's stdout, line by line, waited on with a timeout (no fixed sleeps)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def read() -> None:
            for line in stdout:
                self._queue.put(line.rstrip("\n"))
            self._queue.put(None)

        threading.Thread(target=read, daemon=True).start()

    def until(self, pattern: str) -> re.Match[str]:
        while True:
            try:
                line = self._queue.get(timeout=LINE_TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} in {self.seen}") from None
            if line is None:
                raise AssertionError(f"the output ended without {pattern!r}: {self.seen}")
            self.seen.append(line)
            found = re.search(pattern, line)
            if found is not None:
                return found

    def rest(self) -> list[str]:
        while (line := self._queue.get(timeout=LINE_TIMEOUT_S)) is not None:
            self.seen.append(line)
        return self.seen


MONDAY_0330 = {"cron": "30 3 * * 1", "apps": ["online-boutique"], "agents": ["noop"], "seeds": [1]}


def _start(argv: list[str]) -> tuple[subprocess.Popen[str], Lines]:
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, Lines(process)


def _is_monday_0330_utc(text: str) -> None:
    when = datetime.fromisoformat(text)
    assert (when.weekday(), when.hour, when.minute, when.utcoffset()) == (0, 3, 30, timedelta(0)), text


def test_nightly_without_once_prints_its_next_night_and_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    config = _write(tmp_path / "nightly.yaml", MONDAY_0330)
    process, lines = _start(["nightly", "--config", str(config), "--data", str(tmp_path / "control")])
    try:
        _is_monday_0330_utc(lines.until(r"next night at (\S+);")[1])
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=LINE_TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert lines.rest()[-1] == "nightly: stopped"
    assert process.stderr is not None and process.stderr.read() == ""
    assert Registry(f"sqlite:///{tmp_path / 'control' / 'registry.sqlite'}").page()[0] == 0


def test_an_interrupted_nightly_once_stops_its_run_tells_the_table_and_exits_130(tmp_path: Path) -> None:
    config = _write(tmp_path / "nightly.yaml", {**MONDAY_0330, "seeds": [5, 6], "concurrency": 1,
                    "baseline": False, "schedule": {"faults": 10, "injection_period_s": 1200,
                                                    "observation_period_s": 1200}})  # fmt: skip
    data = tmp_path / "control"
    process, lines = _start(["nightly", "--once", "--config", str(config), "--data", str(data)])
    try:
        run_id = lines.until(r"^started +online-boutique  noop  seed 5  run (\S+)  running")[1]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=LINE_TIMEOUT_S) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    ticks = _ticks("\n".join(lines.rest()))
    assert [(t["kind"], t["run"], t["status"], t["done"]) for t in ticks] == [
        ("started", run_id, "running", "0"),
        ("ended", run_id, "stopped", "1"),
    ]
    assert lines.seen[-2].split()[:4] == ["online-boutique", "noop", "5", "stopped"]
    assert lines.seen[-1] == "1 run, 1 failed"
    assert process.stderr is not None
    assert process.stderr.read().splitlines() == ["marathon: interrupted: 1 of 2 runs not started"]
    registry = Registry(f"sqlite:///{data / 'registry.sqlite'}")
    assert [(r.id, r.status) for r in registry.page()[1]] == [(run_id, "stopped")]


def test_a_scheduled_night_is_told_run_by_run_and_recorded_as_a_night(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "nightly.yaml", {**MONDAY_0330, "seeds": [7], "baseline": False, "schedule": TINY}
    )
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    registry = Registry(url)
    manager = RunManager(registry=registry, metrics=Metrics(), data_dir=tmp_path, max_active=1)
    said: queue.Queue[str] = queue.Queue()
    scheduler = start_scheduler(manager, config_path=config, db_url=url, say=said.put)
    told: list[str] = []
    try:
        upcoming = next_run_at()
        assert upcoming is not None
        _is_monday_0330_utc(upcoming)
        scheduler.get_job(JOB_ID).modify(next_run_time=datetime.now(UTC))  # fire now, not on Monday
        while not told or not told[-1].startswith("next night at "):
            told.append(said.get(timeout=LINE_TIMEOUT_S))
    finally:
        stop_scheduler(scheduler, wait=True)
        manager.shutdown()
    assert next_run_at() is None
    header, started, ended, table, upcoming_line = told
    night = _night_name(header)
    assert header == f"night {night}: 1 run, 1 at once"
    history = night_history(registry)
    assert [(n.night, [(r.agent, r.seed, r.status) for r in n.runs]) for n in history] == [
        (night, [("noop", 7, "finished")])
    ]
    (run,) = history[0].runs
    assert [(t["kind"], t["run"], t["done"]) for t in _ticks(f"{started}\n{ended}")] == [
        ("started", run.run_id, "0"),
        ("ended", run.run_id, "1"),
    ]
    assert table.splitlines()[1].split()[5] == f"/runs/{run.run_id}/report"
    assert table.splitlines()[-1] == "1 run, 0 failed"
    assert upcoming_line == f"next night at {upcoming}"


def test_serve_prints_the_next_night_it_schedules_and_get_nightly_reports_it(tmp_path: Path) -> None:
    config = _write(tmp_path / "nightly.yaml", MONDAY_0330)
    process, lines = _start(["serve", "--port", "0", "--nightly", str(config), "--data", str(tmp_path / "c")])
    try:
        url = lines.until(r"control plane at (http://127\.0\.0\.1:\d+)/")[1]
        upcoming = lines.until(rf"nightly matrix {re.escape(str(config))}: next night at (\S+)$")[1]
        _is_monday_0330_utc(upcoming)
        with httpx.Client(base_url=url, timeout=30.0) as client:
            nightly = client.get("/nightly").json()
        assert nightly == {"next_run_at": upcoming, "nights": []}
        Nightly.model_validate(nightly)
    finally:
        process.send_signal(signal.SIGTERM)  # how it ends is serve's own business
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=LINE_TIMEOUT_S)
        if process.poll() is None:
            process.kill()
            process.wait()
