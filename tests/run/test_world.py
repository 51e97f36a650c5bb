"""The twin world's warm-up: schedule time 0 is a serving application, or the run does not start."""

from __future__ import annotations

import shutil
import threading
from functools import partial
from pathlib import Path

import pytest

from orchestrator.cluster.client import KubeClient, workloads_not_ready
from orchestrator.errors import OrchestratorError, TelemetryError
from orchestrator.run import world as world_module
from orchestrator.run.world import WARMUP_QUIET_S, start_twin_world
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.server import start_prometheus
from orchestrator.twin.clock import STEP_SECONDS
from orchestrator.twin.launch import start_twin
from orchestrator.twin.observe.telemetry import SCRAPE_SECONDS, timestamp_ms
from orchestrator.twin.timefmt import EPOCH

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")


def test_schedule_time_zero_comes_after_every_workload_serves_and_a_quiet_window(tmp_path: Path) -> None:
    world = start_twin_world(app="train-ticket", seed=3, run_dir=tmp_path, clock="stepped", speed=1.0)
    try:
        assert world.now_s() == 0.0
        # Train Ticket's Java services need most of a minute before they serve.
        assert world.offset_s > WARMUP_QUIET_S
        assert world.origin_epoch_s == EPOCH.timestamp() + world.offset_s
        deployments = world.client().list_objects("Deployment", namespace="train-ticket")
        assert len(deployments) == 47
        for deployment in deployments:
            assert deployment["status"]["availableReplicas"] >= deployment["spec"]["replicas"]
        sets = world.client().list_objects("StatefulSet", namespace="train-ticket")
        assert sorted((s["metadata"]["name"], s["status"]["readyReplicas"]) for s in sets) == [
            ("nacos", 3), ("nacosdb-mysql", 3), ("tsdb-mysql", 3),
        ]  # fmt: skip
        assert world.advance_to(120.0, stop=threading.Event()) == 120.0
    finally:
        world.stop()


def count_stops(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A list that gets an entry each time a twin world is stopped."""
    stopped: list[bool] = []
    real_stop = world_module.TwinWorld.stop

    def stop(self: world_module.TwinWorld) -> None:
        stopped.append(True)
        real_stop(self)

    monkeypatch.setattr(world_module.TwinWorld, "stop", stop)
    return stopped


def test_an_application_that_never_serves_stops_the_run_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(world_module, "WARMUP_LIMIT_S", 10.0)
    stopped = count_stops(monkeypatch)
    with pytest.raises(OrchestratorError) as raised:
        start_twin_world(app="train-ticket", seed=3, run_dir=tmp_path, clock="stepped", speed=1.0)
    assert "train-ticket: not every workload became available within 10 s" in str(raised.value)
    assert "ts-order-service" in str(raised.value) and "tsdb-mysql" in str(raised.value)
    assert stopped == [True]  # its twin and Prometheus are not left running


def test_a_stepped_world_waits_for_its_series_only_when_asked(tmp_path: Path) -> None:
    world = start_twin_world(app="online-boutique", seed=3, run_dir=tmp_path, clock="stepped", speed=1.0)
    try:
        twin, querier = world.running.twin, PrometheusQuerier(world.prometheus.url)

        def newest_in_prometheus() -> tuple[float, float]:
            """The instant of the twin's last scrape, and the newest sample Prometheus has up to it."""
            last = timestamp_ms(twin.next_scrape - SCRAPE_SECONDS) / 1000
            found = querier.instant("max(timestamp(kube_pod_info))", at=last)
            return last, found[0].value

        # Two scrapes on, fewer than a push's worth: without being asked, nothing waits for them.
        world.advance_to(30.0, stop=threading.Event(), series=False)
        last, newest = newest_in_prometheus()
        assert newest < last
        world.advance_to(45.0, stop=threading.Event())
        last, newest = newest_in_prometheus()
        assert newest == last
    finally:
        world.stop()


def test_the_warm_up_reads_readiness_from_the_store_as_the_api_answers_it(tmp_path: Path) -> None:
    """The warm-up asks the twin's store in-process; at every step it must give the answer the API gives, or
    schedule time 0 (and every bundle) moves."""
    running = start_twin("train-ticket", seed=3, kubeconfig=tmp_path / "kubeconfig")
    client = KubeClient.from_kubeconfig(running.kubeconfig)
    world = world_module.SteppedTwinWorld(
        running=running,
        prometheus=None,  # type: ignore[arg-type]  # the warm-up's readiness reads no Prometheus
        kubeconfig=running.kubeconfig,
    )
    answers: list[list[str]] = []
    try:
        for _ in range(int(WARMUP_QUIET_S / STEP_SECONDS)):
            through_api = workloads_not_ready(client, "train-ticket")
            assert world._not_ready() == through_api
            answers.append(through_api)
            if not through_api and len(answers) > 1 and not answers[-2]:
                break
            running.advance(STEP_SECONDS, flush=False)
    finally:
        client.close()
        running.stop()
    assert answers[0] and "tsdb-mysql" in answers[0]  # StatefulSets and Deployments both waited for
    assert not answers[-1]


def test_a_prometheus_that_never_becomes_ready_stops_the_twin_booted_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        world_module, "start_prometheus", partial(start_prometheus, binary="false")
    )  # exits at once, while the twin boots
    stopped = count_stops(monkeypatch)
    with pytest.raises(TelemetryError, match="prometheus exited with code 1 before becoming ready"):
        start_twin_world(app="online-boutique", seed=3, run_dir=tmp_path, clock="stepped", speed=1.0)
    assert stopped == [True]
