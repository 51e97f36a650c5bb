"""The control plane over HTTP against a live ``marathon serve``: a whole twin run followed through its
event stream, a run stopped mid-way, and the answers to bad, unauthorised and unknown requests; and, in
process, the filters of the run list."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from orchestrator.api.app import Settings, create_app
from orchestrator.api.events import EventLog
from orchestrator.api.registry import Registry
from orchestrator.bundle.verify import verify_bundle
from orchestrator.cluster.client import KubeClient
from orchestrator.run.events import Finished, Injected, Started
from orchestrator.twin.apiserver.certificates import issue
from orchestrator.twin.apiserver.kubeconfig import Credentials, write_kubeconfig
from tests.api.bundles import pending_in_ledger, unpack, unreverted
from tests.api.cluster import separate_cluster
from tests.api.live import AUTH, Server, events, start_run, wait_ended


@pytest.mark.slow
def test_a_short_twin_run_streams_its_events_and_its_bundle_scores_as_marathon_score_does(
    server: Server, tmp_path: Path
) -> None:
    with server.client() as client:
        run_id = start_run(client, baseline=True)
        seen = list(events(client, run_id))
        kinds = [e["type"] for e in seen]
        assert kinds[0] == "started"
        assert "injected" in kinds and "reverted" in kinds and "concurrency" in kinds, seen[-5:]
        assert kinds.count("invocation") == 10
        assert kinds[-1] == "finished" and seen[-1]["status"] == "finished"
        assert [e["seq"] for e in seen] == list(range(len(seen)))

        view = client.get(f"/runs/{run_id}").json()
        assert view["status"] == "finished" and view["invocations"] == 10
        assert view["runner_run_id"] == run_id  # one id: the registry's is the bundle's
        assert view["active_faults"] == []
        assert client.get(f"/runs/{run_id}/bundle").status_code == 401  # ground truth, even once ended
        response = client.get(f"/runs/{run_id}/bundle", headers=AUTH)
        assert response.status_code == 200
        bundle = unpack(response.content, tmp_path / "unpacked")
        verification = verify_bundle(bundle)
        assert verification.ok, verification.findings
        assert unreverted(bundle) == []

        served = client.get(f"/runs/{run_id}/score").json()  # an ended run's score is public
        scored = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "score", str(bundle), "--json",
             "--runs", str(server.data / "runs")],  # where the server keeps the run's no-action baseline
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert served == json.loads(scored.stdout)
        assert view["score"] == served

        report = client.get(f"/runs/{run_id}/report")
        assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
        level = served["degradation_level"]  # the report finds the baseline the run was scored against
        assert level is not None and f"<td>{level:.1f} %</td>" in report.text
        board = client.get("/leaderboard").json()["rows"]
        assert any(row["latest"]["run_id"] == run_id for row in board)
        metrics = client.get("/metrics").text
        assert "marathon_injections_total" in metrics and "marathon_invocation_duration_seconds" in metrics
        assert 'marathon_runs_ended_total{source="api",status="finished"} 1.0' in metrics


@pytest.mark.slow
def test_stopping_a_run_midway_reverts_every_fault_and_seals_a_verifiable_bundle(
    server: Server, tmp_path: Path
) -> None:
    with server.client() as client:
        run_id = start_run(client, seed=11, schedule={"faults": 20, "injection_period_s": 2400,
                                                      "observation_period_s": 1200})  # fmt: skip
        for event in events(client, run_id):
            if event["type"] == "injected":
                break
        first = client.post(f"/runs/{run_id}/stop", headers=AUTH)
        second = client.post(f"/runs/{run_id}/stop", headers=AUTH)
        assert first.status_code == 202 and second.status_code == 202
        assert second.json()["status"] in ("stopping", "stopped")
        view = wait_ended(client, run_id)
        assert view["status"] == "stopped" and view["reason"] == "stopped"
        assert view["progress"]["boundary"] < view["progress"]["boundaries"]
        assert view["active_faults"] == []
        assert client.post(f"/runs/{run_id}/stop", headers=AUTH).json()["status"] == "stopped"
        assert client.get(f"/runs/{run_id}/score").json()["faults"] == view["injections"]  # scored as well

        bundle = unpack(client.get(f"/runs/{run_id}/bundle", headers=AUTH).content, tmp_path / "unpacked")
        assert verify_bundle(bundle).ok
        assert unreverted(bundle) == []
    assert pending_in_ledger(server.data / "runs" / run_id / "run" / "faults.ledger.jsonl") == []


def _fields(response_json: dict[str, object]) -> list[list[object]]:
    return [error["loc"] for error in response_json["detail"]]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_bad_requests_get_422_naming_the_field(server: Server) -> None:
    base = {"app": "online-boutique", "seed": 1, "agent": "noop"}
    with server.client() as client:
        cases = [
            ({**base, "app": "no-such-app"}, ["body", "app"]),
            ({k: v for k, v in base.items() if k != "seed"}, ["body", "seed"]),
            ({**base, "seed": -3}, ["body", "seed"]),
            ({**base, "agent": "no-such-agent"}, ["body", "agent"]),
            ({**base, "schedule": {"faults": -1}}, ["body", "schedule", "faults"]),
            ({**base, "schedule": {"delta_s": 60, "budget_s": 90}}, ["body", "schedule", "budget_s"]),
            ({**base, "schedule": {"injection_period_s": 1000}}, ["body", "schedule", "injection_period_s"]),
            ({**base, "backend": "kube"}, ["body", "kubeconfig"]),
            ({**base, "colour": "red"}, ["body", "colour"]),
        ]
        for body, field in cases:
            response = client.post("/runs", json=body, headers=AUTH)
            assert response.status_code == 422, (body, response.text)
            assert field in _fields(response.json()), (body, response.json())
        assert client.get("/runs", params={"limit": 0}).status_code == 422
        assert client.get("/runs", params={"status": "sleeping"}).status_code == 422


@pytest.mark.slow
def test_mutations_need_the_token_and_unknown_runs_are_404(server: Server) -> None:
    body = {"app": "online-boutique", "seed": 1, "agent": "noop"}
    with server.client() as client:
        assert client.post("/runs", json=body).status_code == 401
        assert client.post("/runs", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.post("/runs/nope/stop").status_code == 401
        assert client.post("/runs/nope/stop", headers=AUTH).status_code == 404
        for path in ("/runs/nope/events", "/runs/nope/bundle"):
            assert client.get(path).status_code == 401, path  # not even whether the run exists
        for path in ("/runs/nope", "/runs/nope/events", "/runs/nope/bundle", "/runs/nope/score",
                     "/runs/nope/report"):  # fmt: skip
            assert client.get(path, headers=AUTH).status_code == 404, path
        assert client.get("/healthz").json()["status"] == "ok"


@pytest.mark.slow
def test_the_events_of_a_run_another_process_follows_are_streamed_from_its_file(server: Server) -> None:
    registry = Registry(f"sqlite:///{server.data / 'registry.sqlite'}")
    home = server.data / "runs" / "elsewhere"
    home.mkdir(parents=True)
    fields = {"id": "elsewhere", "app": "online-boutique", "seed": 1, "agent": "noop", "backend": "twin",
              "clock": "stepped", "target": "twin:elsewhere", "source": "nightly", "config_json": {},
              "home": home, "created_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    registry.create(fields=fields)
    registry.update("elsewhere", status="running")
    log = EventLog(home=home)
    log.append(Started(app="online-boutique", agent="noop", seed=1))
    received: list[str] = []

    def follow() -> None:
        with server.client() as client:
            received.extend(e["type"] for e in events(client, "elsewhere", timeout=30))

    reader = threading.Thread(target=follow)
    reader.start()
    time.sleep(1.0)
    log.append(Injected(fault_id="f000", catalog_id="ob-x", t=120.0, category="network", target="frontend"))
    registry.update("elsewhere", status="finished")
    log.append(Finished(status="finished"))
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert received == ["started", "injected", "finished"]


# A scorecard as ``marathon score --json`` writes it (docs/metrics.md), of one located fault.
SCORE = {"marathon_score": 50.0, "corr": 1.0, "loc": 1.0, "loc_strict": 1.0, "rep": 0.0, "risk": None,
         "degradation_level": None, "mttd_s": {"median": 60.0, "n": 1}, "mttl_s": {"median": 60.0, "n": 1},
         "mttr_s": {"median": None, "n": 0}, "faults": 1, "forbidden_attempts": 0, "interventions": 0,
         "model_calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
         "outcomes": [{"id": "f000", "catalog_id": "ob-cart-redis-port", "category": "configuration",
                       "mechanism": "config", "a": 1, "b": 1, "c": 0, "outcome": "located_without_repair"}]}


@pytest.mark.slow
def test_a_live_runs_events_bundle_score_and_report_need_the_token_and_only_its_end_opens_score_and_report(
    server: Server,
) -> None:
    registry = Registry(f"sqlite:///{server.data / 'registry.sqlite'}")
    home = server.data / "runs" / "secretive"
    home.mkdir(parents=True)
    fields = {"id": "secretive", "app": "online-boutique", "seed": 1, "agent": "noop", "backend": "twin",
              "clock": "stepped", "target": "twin:secretive", "source": "nightly", "config_json": {},
              "home": home, "created_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    registry.create(fields=fields)
    registry.update("secretive", status="running")
    log = EventLog(home=home)
    log.append(Started(app="online-boutique", agent="noop", seed=1))
    log.append(Injected(fault_id="f000", catalog_id="ob-cart-redis-port", t=120.0, category="configuration",
                        target="deployment/cartservice"))  # fmt: skip
    token = AUTH["Authorization"].removeprefix("Bearer ")
    strangers = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}]
    base = "/runs/secretive"
    with server.client() as client:
        for headers in strangers:
            for path in ("events", "bundle", "score", "report"):
                refused = client.get(f"{base}/{path}", headers=headers)
                assert refused.status_code == 401, (path, headers)
                assert "ob-cart-redis-port" not in refused.text
        assert client.get(f"{base}/score", headers=AUTH).status_code == 409  # let in: not scored yet
        assert client.get(f"{base}/report", headers=AUTH).status_code == 409
        assert client.get(f"{base}/bundle", headers=AUTH).status_code == 409
        with client.stream("GET", f"{base}/events", headers=AUTH, timeout=30) as stream:
            data = (line for line in stream.iter_lines() if line.startswith("data:"))
            injected = next(json.loads(line[5:]) for line in data if "injected" in line)
        assert injected["catalog_id"] == "ob-cart-redis-port"
        assert client.get(base).json()["status"] == "running"  # the run's row itself is public

        log.append(Finished(status="finished"))
        registry.update("secretive", status="finished", score=SCORE)
        assert client.get(f"{base}/score").json() == SCORE
        assert client.get(f"{base}/report").status_code == 404  # public now; this run left no bundle
        for headers in strangers:
            assert client.get(f"{base}/events", headers=headers).status_code == 401
            assert client.get(f"{base}/bundle", headers=headers).status_code == 401


@pytest.mark.slow
def test_a_copied_kubeconfig_of_a_cluster_with_a_live_run_cannot_start_a_second_run_there(
    server: Server, tmp_path: Path
) -> None:
    schedule = {"faults": 1, "delta_s": 5, "budget_s": 1, "injection_period_s": 3600,
                "observation_period_s": 600}  # fmt: skip
    with separate_cluster(tmp_path / "cluster") as cluster, server.client() as client:
        body = {"backend": "kube", "kubeconfig": str(cluster.kubeconfig), "seed": 3,
                "prometheus_url": cluster.prometheus_url, "schedule": schedule}  # fmt: skip
        run_id = start_run(client, **body)
        try:
            copied = tmp_path / "elsewhere" / "copy-of-kubeconfig"
            copied.parent.mkdir()
            shutil.copy(cluster.kubeconfig, copied)
            again = client.post(
                "/runs", json={"app": "online-boutique", "agent": "noop", **body, "kubeconfig": str(copied)},
                headers=AUTH,
            )
            assert again.status_code == 409 and run_id in again.json()["detail"]
            row = Registry(f"sqlite:///{server.data / 'registry.sqlite'}").get(run_id)
            assert row is not None
            kube = KubeClient.from_kubeconfig(copied)
            try:
                assert row.target == f"kube:{kube.system_uid()}@{cluster.url}"
            finally:
                kube.close()
        finally:
            client.post(f"/runs/{run_id}/stop", headers=AUTH)
            wait_ended(client, run_id)


@pytest.mark.slow
def test_a_kubeconfig_whose_cluster_does_not_answer_is_a_422_on_the_kubeconfig_field(
    server: Server, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    authority = issue(now=datetime.now(UTC)).ca_pem
    credentials = Credentials(server=f"https://127.0.0.1:{port}", token="t", ca_pem=authority)
    kubeconfig = write_kubeconfig(tmp_path / "gone", credentials)
    body = {"app": "online-boutique", "seed": 1, "agent": "noop", "backend": "kube",
            "kubeconfig": str(kubeconfig), "prometheus_url": "http://127.0.0.1:9"}  # fmt: skip
    with server.client() as client:
        answer = client.post("/runs", json=body, headers=AUTH)
    assert answer.status_code == 422, answer.text
    assert ["body", "kubeconfig"] in [problem["loc"] for problem in answer.json()["detail"]]


def test_the_run_list_is_filtered_by_app_agent_status_source_and_seed_and_refuses_an_unknown_filter(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    registry = Registry(url)
    rows = [  # id, app, agent, status, source, seed
        ("r1", "online-boutique", "noop", "finished", "api", 7),
        ("r2", "online-boutique", "runbook", "stopped", "cli", 7),
        ("r3", "hotel-reservation", "noop", "finished", "nightly 2026-01-01", 3),
        ("r4", "online-boutique", "noop", "failed", "nightly 2026-01-02", 7),
        ("r5", "online-boutique", "noop", "finished", "nightlyish", 1),  # not a nightly run
    ]
    for run_id, app, agent, status, source, seed in rows:
        registry.create(fields={
            "id": run_id, "app": app, "seed": seed, "agent": agent, "backend": "twin", "clock": "stepped",
            "target": f"twin:{run_id}", "source": source, "config_json": {}, "home": tmp_path / run_id,
            "created_at": "2026-01-01T00:00:00+00:00",
        })  # fmt: skip
        registry.update(run_id, status=status)
    cases: list[tuple[dict[str, str | int], list[str]]] = [
        ({}, ["r5", "r4", "r3", "r2", "r1"]),
        ({"source": "nightly"}, ["r4", "r3"]),
        ({"source": "cli"}, ["r2"]),
        ({"seed": 7}, ["r4", "r2", "r1"]),
        ({"seed": 7, "source": "nightly"}, ["r4"]),
        ({"app": "hotel-reservation"}, ["r3"]),
        ({"agent": "runbook"}, ["r2"]),
        ({"status": "finished", "agent": "noop"}, ["r5", "r3", "r1"]),
        ({"seed": 7, "limit": 1, "offset": 1}, ["r2"]),
    ]
    with TestClient(create_app(Settings(db_url=url, data_dir=tmp_path, token="t"))) as client:
        for params, expected in cases:
            page = client.get("/runs", params=params).json()
            assert [run["id"] for run in page["runs"]] == expected, params
            assert page["total"] == (3 if params.get("limit") else len(expected)), params
        for unknown in ({"sauce": "nightly"}, {"seed": 7, "sead": 7}, {"Source": "api"}):
            refused = client.get("/runs", params=unknown)
            assert refused.status_code == 400, unknown
            (name,) = set(unknown) - {"seed"}
            assert repr(name) in refused.json()["detail"], refused.json()
        assert client.get("/runs", params={"source": "elsewhere"}).status_code == 422
        assert client.get("/runs", params={"seed": -1}).status_code == 422
