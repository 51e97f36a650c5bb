"""The control plane's parts without a server: leaderboard, registry, request mapping, ledger settling,
event logs and the refusal to serve beyond loopback without a token."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, text

import orchestrator.api
from orchestrator.api.commands import is_loopback
from orchestrator.api.events import EventLog, ServiceTail
from orchestrator.api.leaderboard import leaderboard_rows
from orchestrator.api.metrics import Metrics
from orchestrator.api.models import RunRequest, ScheduleOverrides
from orchestrator.api.nightly import (
    JOB_ID,
    NightlyConfig,
    crontab_trigger,
    matrix,
    run_matrix,
    start_scheduler,
)
from orchestrator.api.recovery import settle_ledger
from orchestrator.api.registry import Registry, RunRow, TargetBusy
from orchestrator.api.runs import (
    TARGET_LIMIT,
    RunManager,
    TooManyRuns,
    config_for,
    config_problems,
    kube_target,
    request_field,
)
from orchestrator.cli import main
from orchestrator.errors import ConfigError
from orchestrator.mechanisms import ledger
from orchestrator.mechanisms.handles import Handle
from orchestrator.run.events import (
    EVENT_TYPES,
    Failed,
    Injected,
    Invoked,
    Reverted,
    RunEvent,
    ServicePoint,
    Started,
)
from orchestrator.schedule import default_load


def _fields(run_id: str, *, target: str, app: str = "online-boutique", agent: str = "noop") -> dict[str, Any]:
    return {"id": run_id, "app": app, "seed": 1, "agent": agent, "backend": "twin", "clock": "stepped",
            "target": target, "source": "api", "config_json": {"app": app}, "home": Path("/nowhere"),
            "created_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip


def _scored(registry: Registry, run_id: str, score: float, *, agent: str = "noop") -> RunRow:
    registry.create(fields=_fields(run_id, target=f"twin:{run_id}", agent=agent))
    registry.update(run_id, status="finished", score={"marathon_score": score})
    row = registry.get(run_id)
    assert row is not None
    return row


def test_the_leaderboard_keeps_the_best_and_the_latest_score_per_app_and_agent(registry_url: str) -> None:
    registry = Registry(registry_url)
    _scored(registry, "a", 40.0)
    _scored(registry, "b", 70.0)
    _scored(registry, "c", 70.0)
    _scored(registry, "d", 55.0)
    _scored(registry, "e", 90.0, agent="oracle")
    rows = leaderboard_rows(registry.scored())
    assert [(r.agent, r.runs, r.best.run_id, r.latest.run_id) for r in rows] == [
        ("oracle", 1, "e", "e"),
        ("noop", 4, "b", "d"),  # the tie for best goes to the earlier run
    ]
    assert rows[1].best.report == "/runs/b/report"


def test_the_registry_refuses_a_second_active_run_on_one_target_and_survives_reopening(
    registry_url: str,
) -> None:
    url = registry_url
    registry = Registry(url)
    registry.create(fields=_fields("one", target="kube:/k"))
    with pytest.raises(TargetBusy) as busy:
        registry.create(fields=_fields("two", target="kube:/k"))
    assert busy.value.run_id == "one"
    registry.update("one", status="stopped", active_faults=["f002", "f001"])
    registry.create(fields=_fields("two", target="kube:/k", app="train-ticket"))
    reopened = Registry(url)
    assert [r.id for r in reopened.active()] == ["two"]
    total, rows = reopened.page(app="online-boutique")
    assert total == 1 and rows[0].active_faults == ["f001", "f002"]
    total, rows = reopened.page(offset=1, limit=1)
    assert total == 2 and [r.id for r in rows] == ["one"]  # newest first


def test_concurrent_starts_on_one_target_admit_exactly_one_run(registry_url: str) -> None:
    registry = Registry(registry_url)
    barrier = threading.Barrier(8)
    outcomes: dict[str, str] = {}

    def start(run_id: str) -> None:
        barrier.wait()
        try:
            registry.create(fields=_fields(run_id, target="kube:/shared"))
            outcomes[run_id] = "created"
        except TargetBusy as busy:
            outcomes[run_id] = f"busy:{busy.run_id}"

    threads = [threading.Thread(target=start, args=(f"r{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    created = [run_id for run_id, outcome in outcomes.items() if outcome == "created"]
    assert len(created) == 1, outcomes
    assert all(
        outcome == f"busy:{created[0]}" for run_id, outcome in outcomes.items() if run_id not in created
    )
    for i in range(5):  # other targets at the same time: every run gets its own sequence number
        registry.create(fields=_fields(f"other{i}", target=f"twin:other{i}"))
    total, rows = registry.page(limit=100)
    assert total == 6
    assert len({row.seq for row in rows}) == 6


def test_a_request_becomes_the_runner_configuration_and_its_problems_point_into_the_body(
    tmp_path: Path,
) -> None:
    overrides = ScheduleOverrides(faults=5, delta_s=60, injection_period_s=600)
    request = RunRequest(app="online-boutique", seed=3, agent="noop", schedule=overrides)
    config = config_for(request, home=tmp_path / "h", runs_root=tmp_path / "runs")
    assert (config.faults, config.delta_s, config.budget_s, config.clock) == (5, 60, 50.0, "stepped")
    assert config.out == tmp_path / "h" / "run" and config.quiet
    assert request_field("injection_period_s") == ["body", "schedule", "injection_period_s"]
    assert request_field("kubeconfig") == ["body", "kubeconfig"]
    bad = RunRequest(app="online-boutique", seed=3, agent="noop", schedule=ScheduleOverrides(delta_s=7))
    with pytest.raises(ConfigError) as caught:
        config_for(bad, home=tmp_path / "h", runs_root=tmp_path / "runs")
    locations = [d["loc"] for d in config_problems(caught.value.problems, str(caught.value))]
    assert ["body", "schedule", "injection_period_s"] in locations


def test_a_request_runs_the_apps_published_load_unless_it_asks_for_another(tmp_path: Path) -> None:
    def load(**overrides: Any) -> tuple[int, int | None]:
        schedule = ScheduleOverrides(**overrides)
        request = RunRequest(app="online-boutique", seed=3, agent="noop", schedule=schedule)
        config = config_for(request, home=tmp_path / "h", runs_root=tmp_path / "runs")
        return config.faults, config.max_concurrent

    assert load() == default_load("online-boutique") == (90, 10)
    assert load(max_concurrent="none") == (90, None)
    assert load(faults=60, max_concurrent=4) == (60, 4)
    with pytest.raises(ValidationError):
        ScheduleOverrides.model_validate({"max_concurrent": "unlimited"})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens there once the socket is closed


def _ledger_of_a_vanished_cluster(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
        "users": [{"name": "u", "user": {}}],
    }), encoding="utf-8")  # fmt: skip
    path = tmp_path / "faults.ledger.jsonl"
    book = ledger.Ledger(path)
    book.open(
        ledger.Target(kubeconfig=str(kubeconfig), namespace="online-boutique", chaos_namespace="chaos-mesh")
    )
    for n in (1, 2):
        book.planned(Handle(fault_id=f"f00{n}", catalog_id="ob-x", mechanism="config", kind="Deployment",
                            namespace="online-boutique", name="cartservice"))  # fmt: skip
        book.applied(f"f00{n}")
    book.close()
    return path


def test_the_ledger_of_a_twin_that_died_with_its_worker_is_settled(tmp_path: Path) -> None:
    path = _ledger_of_a_vanished_cluster(tmp_path)
    assert settle_ledger(path, backend="twin") == (0, 2, [])
    assert ledger.read(path)[1] == []


def test_the_ledger_of_an_unreachable_real_cluster_stays_pending_for_a_later_recover(tmp_path: Path) -> None:
    path = _ledger_of_a_vanished_cluster(tmp_path)
    reverted, settled, failed = settle_ledger(path, backend="kube")
    assert (reverted, settled) == (0, 0) and "does not answer" in failed[0]
    assert [h.fault_id for h in ledger.read(path)[1]] == ["f001", "f002"]


def test_an_event_log_replays_from_disk_without_a_torn_last_line_and_the_tail_reads_whole_lines(
    tmp_path: Path,
) -> None:
    log = EventLog(home=tmp_path)
    log.append(Started(app="online-boutique", agent="noop", seed=1))
    injected = log.append(
        Injected(fault_id="f000", catalog_id="ob-cart-redis-port", t=120.0, category="configuration",
                 target="cartservice")
    )  # fmt: skip
    assert injected == {"seq": 1, "type": "injected", "fault_id": "f000", "catalog_id": "ob-cart-redis-port",
                        "t": 120.0, "category": "configuration", "target": "cartservice"}  # fmt: skip
    with (tmp_path / "events.jsonl").open("a", encoding="utf-8") as out:
        out.write('{"type": "rev')
    replayed = EventLog.load(tmp_path, closed=True)
    assert [e["seq"] for e in replayed.events] == [0, 1]
    assert replayed.since(1) == ([injected], True)

    service = tmp_path / "service.jsonl"
    tail = ServiceTail(service)
    assert tail.new_samples() == []
    service.write_text('{"t": 15.0, "q": 2.0, "e": 0.5, "l": 0}\n{"t": 30.0, "q"', encoding="utf-8")
    assert tail.new_samples() == [ServicePoint(t=15.0, q=2.0, e=0.5)]
    with service.open("a", encoding="utf-8") as out:
        out.write(': 1.0, "e": 0.0, "l": 0}\n')
    assert [s.t for s in tail.new_samples()] == [30.0]


def test_the_dashboard_follows_every_event_type_and_no_other() -> None:
    script = (Path(orchestrator.api.__file__).parent / "static" / "dashboard.js").read_text(encoding="utf-8")
    listed = re.search(r"const TYPES = \[([^\]]*)\];", script)
    assert listed is not None
    assert sorted(re.findall(r'"([a-z]+)"', listed.group(1))) == sorted(EVENT_TYPES)


def test_the_operator_metrics_count_the_runs_events() -> None:
    metrics = Metrics()
    events: list[RunEvent] = [
        Injected(fault_id="f000", catalog_id="ob-x", t=120.0, category="network", target="cartservice"),
        Failed(operation="revert", error="API down", fault_id="f000", catalog_id="ob-x"),
        Failed(operation="baseline", error="no baseline"),
        Reverted(fault_id="f000", t=240.0, outcome="reverted"),
        Invoked(n=1, start_s=120.0, end_s=121.0, exit_code=0, timed_out=False, wall_s=0.7),
    ]
    for event in events:
        metrics.observe(app="online-boutique", agent="noop", event=event)
    exposed = metrics.exposition().decode()
    assert 'marathon_injections_total{app="online-boutique",category="network"} 1.0' in exposed
    assert 'marathon_failures_total{app="online-boutique"} 2.0' in exposed
    assert 'marathon_reverts_total{app="online-boutique",outcome="reverted"} 1.0' in exposed
    assert 'marathon_invocation_duration_seconds_count{agent="noop",app="online-boutique"} 1.0' in exposed


def test_serving_beyond_loopback_needs_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MARATHON_API_TOKEN", raising=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    assert main(["serve", "--host", "0.0.0.0", "--data", str(tmp_path), "--no-nightly"]) == 2


def test_start_up_recovery_leaves_runs_another_live_process_follows_and_interrupts_the_rest(
    tmp_path: Path,
) -> None:
    registry = Registry(f"sqlite:///{tmp_path / 'r.sqlite'}")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "orchestrator"])
    try:
        for run_id, owner_pid in (("followed", owner.pid), ("orphaned", None)):
            (tmp_path / run_id).mkdir()
            registry.create(fields={**_fields(run_id, target=f"twin:{run_id}"), "home": tmp_path / run_id})
            registry.update(run_id, status="running", owner_pid=owner_pid)
        manager = RunManager(registry=registry, metrics=Metrics(), data_dir=tmp_path, max_active=1)
        assert [r.id for r in manager.recover()] == ["orphaned"]
        orphaned = registry.get("orphaned")
        assert orphaned is not None and orphaned.status == "interrupted"
        assert orphaned.recovery is not None and "no fault was ever planned" in orphaned.recovery
        assert [r.id for r in registry.active()] == ["followed"]
    finally:
        owner.kill()
        owner.wait()
    assert [r.id for r in manager.recover()] == ["followed"]
    assert registry.active() == []


def test_the_nightly_job_is_kept_in_the_registry_database_with_its_cron_trigger(
    tmp_path: Path, registry_url: str
) -> None:
    url = registry_url
    config = tmp_path / "nightly.yaml"
    config.write_text(
        "cron: '30 3 * * 1'\napps: [online-boutique]\nagents: [noop]\nseeds: [1]\n", encoding="utf-8"
    )
    manager = RunManager(registry=Registry(url), metrics=Metrics(), data_dir=tmp_path, max_active=1)
    scheduler = start_scheduler(manager, config_path=config, db_url=url)
    try:
        job = scheduler.get_job(JOB_ID)
        assert (job.next_run_time.weekday(), job.next_run_time.hour, job.next_run_time.minute) == (0, 3, 30)
    finally:
        scheduler.shutdown(wait=False)
    engine = create_engine(url)
    with engine.connect() as connection:
        stored = connection.execute(text("SELECT id FROM nightly_jobs")).scalars().all()
    assert stored == [JOB_ID]


@pytest.mark.parametrize(
    ("weekday", "days"),
    [("1", "mon"), ("0", "sun"), ("7", "sun"), ("1-5", "mon,tue,wed,thu,fri"), ("*/2", "sun,tue,thu,sat"),
     ("1-5/2", "mon,wed,fri"), ("6,0", "sun,sat"), ("mon-fri", "mon-fri"), ("*", "*")],
)  # fmt: skip
def test_crontab_weekdays_keep_their_crontab_meaning(weekday: str, days: str) -> None:
    trigger = crontab_trigger(f"0 2 * * {weekday}", timezone="UTC")
    assert str(trigger.fields[4]) == days


def test_a_weekday_beyond_seven_or_a_descending_range_is_not_a_crontab(tmp_path: Path) -> None:
    for weekday in ("9", "5-1"):
        with pytest.raises(ValueError, match="ascending range within 0-7"):
            crontab_trigger(f"0 2 * * {weekday}", timezone="UTC")


def test_a_stopped_matrix_and_a_closing_server_start_no_run(tmp_path: Path) -> None:
    registry = Registry(f"sqlite:///{tmp_path / 'r.sqlite'}")
    manager = RunManager(registry=registry, metrics=Metrics(), data_dir=tmp_path, max_active=2)
    config = NightlyConfig(cron="0 2 * * *", apps=["online-boutique"], agents=["noop"], seeds=[1, 2])
    stop = threading.Event()
    stop.set()
    assert run_matrix(manager, config, stop=stop) == []
    manager.shutdown()
    with pytest.raises(TooManyRuns, match="shutting down"):
        manager.submit(matrix(config)[0])
    assert registry.page()[0] == 0


def test_an_unusable_registry_url_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="not-a-database"):
        Registry("not-a-database://x")


def test_a_real_cluster_is_named_by_its_server_and_kube_system_uid_not_by_a_kubeconfig_path() -> None:
    uid = "3f9c2a2e-8d1b-4c47-9a51-2b7f0d6c1e10"
    named = kube_target(server="https://10.0.0.5:6443", uid=uid)
    assert named == f"kube:{uid}@https://10.0.0.5:6443"
    assert kube_target(server="HTTPS://10.0.0.5:6443/", uid=uid) == named  # one server, spelled twice
    assert kube_target(server="https://10.0.0.5:6443", uid=uid.replace("3f", "40")) != named  # re-created
    assert kube_target(server="https://10.0.0.6:6443", uid=uid) != named
    long = kube_target(server="https://" + "a" * 600 + ".example:6443", uid=uid)
    assert len(long) <= TARGET_LIMIT and long.startswith(f"kube:{uid}@sha256:")
