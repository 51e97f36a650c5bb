"""The twin's runtime verdicts, scrape buffer, step clock, Jaeger answers and boot namespaces, one by one."""

from __future__ import annotations

import math

import pytest
import yaml

from orchestrator.catalog.loading import default_root
from orchestrator.errors import TelemetryError
from orchestrator.twin.boot import read_manifests
from orchestrator.twin.clock import StepClock
from orchestrator.twin.cluster import CHAOS_MESH_NAMESPACE, IMMORTAL_NAMESPACES, Cluster
from orchestrator.twin.model.spans import Span, Trace
from orchestrator.twin.observe.telemetry import Telemetry, timestamp_ms
from orchestrator.twin.observe.traces import jaeger_trace
from orchestrator.twin.runtime import ModelRuntime
from orchestrator.twin.store import NAMESPACES
from orchestrator.twin.timefmt import FIXED_EPOCH
from tests.twin.api.support import NODES, ScriptedRuntime
from tests.twin.model.worlds import (
    OB_APP,
    chaos,
    container,
    manifests,
    model,
    pod_of,
    run,
    running_pods,
    world,
)

EPOCH_MS = round(FIXED_EPOCH.timestamp() * 1000)  # an in-process twin's series are at the fixed epoch
EPOCH_US = round(FIXED_EPOCH.timestamp() * 1_000_000)


def _runtime() -> tuple[ModelRuntime, list[dict[str, object]]]:
    built, _ = model(OB_APP)
    docs = manifests(OB_APP)
    run(built, built.topology, docs, start=0.0, seconds=10.0)
    return ModelRuntime(built), running_pods(docs)


def test_an_image_no_registry_holds_cannot_be_pulled() -> None:
    runtime, pods = _runtime()
    pod = pod_of(pods, "paymentservice")
    assert runtime.verdict(pod, container(pod), 20.0).image_known
    container(pod)["image"] = container(pod)["image"].replace("v0.10.6", "v0.10.7")
    verdict = runtime.verdict(pod, container(pod), 20.0)
    assert not verdict.image_known and not verdict.starts


def test_public_utility_images_run_and_do_not_stand_in_for_an_app_image() -> None:
    runtime, pods = _runtime()
    pod = pod_of(pods, "paymentservice")
    for image in ("busybox", "docker.io/library/busybox:1.36", "nginx:1.27", "python:3.12-slim"):
        container(pod)["image"] = image
        verdict = runtime.verdict(pod, container(pod), 20.0)
        assert verdict.image_known and verdict.starts, image
    container(pod)["image"] = "redis:0.0-missing"  # an app's image with a tag nobody built stays missing
    assert not runtime.verdict(pod, container(pod), 20.0).image_known


def test_a_cleared_address_exits_at_start_with_the_services_own_message() -> None:
    runtime, pods = _runtime()
    pod = pod_of(pods, "recommendationservice")
    container(pod)["env"] = [e for e in container(pod)["env"] if e["name"] != "PRODUCT_CATALOG_SERVICE_ADDR"]
    verdict = runtime.verdict(pod, container(pod), 20.0)
    assert not verdict.starts and verdict.exit_reason == "Error"
    assert verdict.exit_message == "Exception: PRODUCT_CATALOG_SERVICE_ADDR environment variable not set"


def test_memory_stress_beyond_the_limit_kills_a_running_container() -> None:
    built, _ = model(OB_APP)
    docs = manifests(OB_APP)
    pods = running_pods(docs)
    spec = {
        "mode": "all",
        "selector": {"labelSelectors": {"app": "recommendationservice"}},
        "stressors": {"memory": {"workers": 1, "size": "400MB"}},
    }
    built.step(5.0, world(built.topology, docs, now=5.0, pods=pods, chaos=[chaos("StressChaos", "m", spec)]))
    pod = pod_of(pods, "recommendationservice")
    verdict = ModelRuntime(built).verdict(pod, container(pod), 10.0)
    assert verdict.exit_reason == "OOMKilled"


def test_a_series_that_disappears_gets_one_staleness_marker() -> None:
    telemetry = Telemetry(remote_write_url=None, keep_samples=True)
    up = ("up", (("namespace", "ob"),))
    down = ("gone", (("namespace", "ob"),))
    telemetry.scrape(15.0, [(up[0], up[1], 1.0), (down[0], down[1], 2.0)])
    telemetry.scrape(30.0, [(up[0], up[1], 1.0)])
    telemetry.scrape(45.0, [(up[0], up[1], 1.0)])
    stale = [line for line in telemetry.samples if line.startswith("gone")]
    assert stale == [
        f'gone{{namespace="ob"}} 2.0 {timestamp_ms(15.0)}',
        f'gone{{namespace="ob"}} stale {timestamp_ms(30.0)}',
    ]


def test_the_scrape_digest_follows_every_value() -> None:
    first, second = Telemetry(remote_write_url=None), Telemetry(remote_write_url=None)
    first.scrape(15.0, [("x", (), 1.0)])
    second.scrape(15.0, [("x", (), 1.0 + 1e-12)])
    assert first.digest != second.digest
    assert timestamp_ms(0.0) == EPOCH_MS and math.isclose(timestamp_ms(1.5) - EPOCH_MS, 1500)


def test_the_step_clock_moves_in_whole_steps_and_carries_the_remainder() -> None:
    clock = StepClock(step_seconds=5.0)
    assert clock.advance(12.0) == [5.0, 10.0]
    assert clock.advance(3.0) == [15.0]
    assert clock.advance(0.0) == []
    with pytest.raises(ValueError, match="negative"):
        clock.advance(-1.0)


def test_a_trace_reads_as_jaeger_would_return_it() -> None:
    spans = [
        Span("b", "a", "cartservice", "GetCart", "server", 1_000, 500, True),
        Span("a", None, "frontend", "GET /cart", "server", 0, 2_000, True),
    ]
    shaped = jaeger_trace(Trace("t1", 0, spans))
    assert {p["serviceName"] for p in shaped["processes"].values()} == {"cartservice", "frontend"}
    child = next(s for s in shaped["spans"] if s["spanID"] == "b")
    assert child["references"] == [{"refType": "CHILD_OF", "traceID": "t1", "spanID": "a"}]
    assert child["startTime"] == EPOCH_US + 1_000
    assert {"key": "error", "type": "bool", "value": True} in child["tags"]


def test_a_remote_write_that_fails_is_reported_by_flush() -> None:
    telemetry = Telemetry(remote_write_url="http://127.0.0.1:9/api/v1/write")
    try:
        telemetry.scrape(15.0, [("x", (("namespace", "ob"),), 1.0)])
        with pytest.raises(TelemetryError, match="remote write to http://127.0.0.1:9"):
            telemetry.flush()
    finally:
        telemetry.close()


def test_a_twin_boots_with_chaos_meshs_namespace_an_ordinary_one_as_a_cluster_with_chaos_mesh_has() -> None:
    cluster = Cluster(seed=1, nodes=NODES, runtime=ScriptedRuntime())
    names = {obj["metadata"]["name"] for obj in cluster.store.list(NAMESPACES)}
    assert names == {"default", "kube-system", "kube-public", "kube-node-lease", CHAOS_MESH_NAMESPACE}
    assert CHAOS_MESH_NAMESPACE == "chaos-mesh" and CHAOS_MESH_NAMESPACE not in IMMORTAL_NAMESPACES


@pytest.mark.parametrize("app", ["online-boutique", "train-ticket", "astronomy-shop"])
def test_manifests_read_by_libyaml_are_the_documents_the_python_loader_reads(app: str) -> None:
    path = default_root() / "manifests" / app / "app.yaml"
    expected = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert repr(read_manifests(app, root=default_root())) == repr(expected)
