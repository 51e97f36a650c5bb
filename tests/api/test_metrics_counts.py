"""The control plane's /metrics reads runs, their live state and their scores from the run registry, so a run
is counted whichever process started it (the API, a ``nightly --once``, the CLI); the exposition parses and
its names follow Prometheus' conventions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from sqlalchemy import text

from orchestrator.api.app import Settings, create_app
from orchestrator.api.metrics import Metrics
from orchestrator.api.registry import Registry

NAME = re.compile(r"^marathon_[a-z][a-z0-9_]*$")


def _register(registry: Registry, run_id: str, *, source: str, seed: int = 1, agent: str = "noop",
              status: str = "finished", **values: Any) -> None:  # fmt: skip
    registry.create(fields={
        "id": run_id, "app": "online-boutique", "seed": seed, "agent": agent, "backend": "twin",
        "clock": "stepped", "target": f"twin:{run_id}", "source": source, "config_json": {},
        "home": Path("/nonexistent") / run_id, "created_at": "2026-12-01T02:00:00+00:00",
    })  # fmt: skip
    registry.update(run_id, status=status, **values)


def _samples(exposition: str) -> dict[str, list[Sample]]:
    """Every sample by name, after checking each family's name and, for counters, the _total suffix."""
    by_name: dict[str, list[Sample]] = {}
    for family in text_string_to_metric_families(exposition):
        assert NAME.match(family.name), family.name
        assert family.documentation, family.name
        for sample in family.samples:
            if family.type == "counter":
                assert sample.name in (f"{family.name}_total", f"{family.name}_created"), sample.name
            by_name.setdefault(sample.name, []).append(sample)
    return by_name


def _value(samples: dict[str, list[Sample]], name: str, **labels: str) -> float:
    found = [s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry(f"sqlite:///{tmp_path / 'registry.sqlite'}")


def test_a_nightly_run_registered_by_another_process_is_counted_on_the_servers_metrics(
    tmp_path: Path,
) -> None:
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'registry.sqlite'}", data_dir=tmp_path, token="t")
    app = create_app(settings)
    with TestClient(app) as client:
        before = _samples(client.get("/metrics").text)
        assert _value(before, "marathon_runs_ended_total", status="finished", source="api") == 0
        assert not [s for s in before.get("marathon_runs_ended_total", []) if s.labels["source"] == "nightly"]
        # Another process (``marathon nightly --once``) writes the same registry.
        other = Registry(settings.db_url)
        _register(other, "n1", source="nightly 2026-12-01", score={"marathon_score": 61.5})
        _register(other, "n2", source="nightly 2026-12-01", status="failed")
        _register(
            other, "c1", source="cli", status="running", active_faults=["f000"], firing=2, invocations=4
        )
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    after = _samples(response.text)
    assert _value(after, "marathon_runs_ended_total", status="finished", source="nightly") == 1
    assert _value(after, "marathon_runs_ended_total", status="failed", source="nightly") == 1
    assert _value(after, "marathon_runs", status="running", source="cli") == 1
    assert _value(after, "marathon_active_runs") == 1
    assert _value(after, "marathon_run_active_faults", run_id="c1", source="cli") == 1
    assert _value(after, "marathon_run_firing_alerts", run_id="c1") == 2
    assert _value(after, "marathon_run_agent_invocations_total", run_id="c1") == 4
    assert _value(after, "marathon_run_score", run_id="n1", seed="1", agent="noop") == 61.5
    assert _value(after, "marathon_registry_up") == 1


def test_ended_runs_leave_the_live_gauges_and_count_once_by_status_and_source(registry: Registry) -> None:
    _register(registry, "a1", source="api", status="running", active_faults=["f000", "f001"], firing=3,
              invocations=7)  # fmt: skip
    metrics = Metrics(registry)
    live = _samples(metrics.exposition().decode())
    assert _value(live, "marathon_run_active_faults", run_id="a1", app="online-boutique") == 2
    assert _value(live, "marathon_runs", status="running", source="api") == 1
    assert _value(live, "marathon_agent_invocations_total", app="online-boutique", agent="noop") == 7
    registry.update("a1", status="stopped", active_faults=[], invocations=8)
    ended = _samples(metrics.exposition().decode())
    assert "marathon_run_active_faults" not in ended and "marathon_run_firing_alerts" not in ended
    assert _value(ended, "marathon_runs_ended_total", status="stopped", source="api") == 1
    assert _value(ended, "marathon_active_runs") == 0
    assert _value(ended, "marathon_agent_invocations_total", app="online-boutique", agent="noop") == 8


def test_scores_are_exposed_for_the_newest_runs_per_app_and_agent_with_the_leaderboards_figures(
    registry: Registry,
) -> None:
    for i, score in enumerate([10.0, 50.0, 20.0, 40.0]):
        _register(registry, f"s{i}", source="nightly", seed=i, score={"marathon_score": score})
    _register(registry, "o0", source="api", agent="oracle", score={"marathon_score": 90.0})
    _register(registry, "x9", source="api", seed=9, status="stopped", reason="stopped",
              score={"marathon_score": 100.0})  # fmt: skip
    samples = _samples(Metrics(registry, latest_scores=3).exposition().decode())
    noop = {s.labels["run_id"]: s.value for s in samples["marathon_run_score"] if s.labels["agent"] == "noop"}
    assert noop == {"s2": 20.0, "s3": 40.0, "x9": 100.0}  # the newest three scored runs, stopped or not
    pair = {"app": "online-boutique", "agent": "noop"}
    # The leaderboard's figures, as GET /leaderboard has them: the stopped run is in none of them.
    assert _value(samples, "marathon_leaderboard_best_score", **pair) == 50.0
    assert _value(samples, "marathon_leaderboard_latest_score", **pair) == 40.0
    assert _value(samples, "marathon_leaderboard_mean_score", **pair) == 30.0  # over the four seeds
    assert _value(samples, "marathon_leaderboard_seeds", **pair) == 4
    assert _value(samples, "marathon_leaderboard_runs", **pair) == 4
    # sd of 10, 50, 20, 40 is 18.257; t(0.975, 3) = 3.182446
    assert _value(samples, "marathon_leaderboard_ci95_half_width", **pair) == pytest.approx(29.05, abs=0.01)
    assert _value(samples, "marathon_leaderboard_mean_score", app="online-boutique", agent="oracle") == 90.0
    one_seed = [s for s in samples["marathon_leaderboard_ci95_half_width"] if s.labels["agent"] == "oracle"]
    assert one_seed == []  # no interval from one seed


def test_a_registry_that_does_not_answer_is_told_by_a_gauge_not_a_failed_scrape(registry: Registry) -> None:
    metrics = Metrics(registry)
    with registry.engine.begin() as tx:
        tx.execute(text("DROP TABLE runs"))
    samples = _samples(metrics.exposition().decode())
    assert _value(samples, "marathon_registry_up") == 0
    assert "marathon_runs" not in samples


def test_without_a_registry_only_the_event_counters_are_kept() -> None:
    samples = _samples(Metrics().exposition().decode())
    assert "marathon_registry_up" not in samples and "marathon_runs" not in samples
