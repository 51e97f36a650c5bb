"""Each mechanism on the twin, through the real injectors: the symptom shows in PromQL and in the logs, and
the revert leaves the Deployment exactly as it was, field by field (or no chaos object behind)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from orchestrator.admission.observing import EPOCH_S, ClusterReader, Window
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import load_catalog
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.mechanisms.applying import Applied, Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.telemetry.probes import ProbeQuery, evaluate_probe
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.server import PrometheusServer
from orchestrator.twin.launch import RunningTwin
from tests.twin.twin_support import OB, prometheus, served

pytestmark = pytest.mark.slow
CHAOS_NS = "chaos-mesh"
CHAOS_PLURALS = ("podchaos", "networkchaos", "stresschaos", "dnschaos", "iochaos", "httpchaos")


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    yield from prometheus(tmp_path_factory.mktemp("prom"))


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory, prom: PrometheusServer) -> Iterator[RunningTwin]:
    running = served(tmp_path_factory.mktemp("twin"), remote_write_url=prom.remote_write_url)
    try:
        running.advance(180)
        yield running
    finally:
        running.stop()


class World:
    def __init__(self, twin: RunningTwin, prom: PrometheusServer, ledger_path: Path) -> None:
        self.twin = twin
        self.client = KubeClient.from_kubeconfig(twin.kubeconfig)
        self.querier = PrometheusQuerier(prom.url)
        self.ctx = Context(
            client=self.client, namespace=OB, chaos_namespace=CHAOS_NS, settle=lambda: self._settle()
        )
        self.book = Ledger(ledger_path)
        self.book.open(Target(kubeconfig=str(twin.kubeconfig), namespace=OB, chaos_namespace=CHAOS_NS))
        self.applier = Applier(ctx=self.ctx, ledger=self.book)
        self.reader = ClusterReader(client=self.client, namespace=OB)

    def _settle(self) -> None:
        self.twin.advance(5)

    def deployment(self, name: str) -> dict[str, Any]:
        found = self.client.read(ObjectRef("Deployment", OB, name))
        # The revision annotation moves with every rollout, as in Kubernetes; the change cause is ours.
        cause = (found["metadata"].get("annotations") or {}).get("kubernetes.io/change-cause")
        return {"spec": found["spec"], "change-cause": cause}

    def unhealthy(self, entry: Entry) -> bool:
        probe = ProbeQuery(
            query=entry.probe.query.replace("$namespace", OB),
            healthy=entry.probe.healthy.model_dump(),
        )
        return not evaluate_probe(self.querier, probe, at=EPOCH_S + self.twin.twin.now).healthy

    def printed(self, entry: Entry, *, seconds: float) -> bool:
        now = self.twin.twin.now
        window = Window(now - seconds, now)
        return self.reader.logs({entry.log.service}, window, now=now).contains(entry.log.message)

    def chaos_objects(self) -> list[str]:
        custom = k8s.CustomObjectsApi(self.client.api)
        names = []
        for plural in CHAOS_PLURALS:
            listed: Any = custom.list_namespaced_custom_object("chaos-mesh.org", "v1alpha1", CHAOS_NS, plural)
            names += [item["metadata"]["name"] for item in listed["items"]]
        return names

    def close(self) -> None:
        self.book.close()
        self.client.close()
        self.querier.close()


@pytest.fixture
def world(twin: RunningTwin, prom: PrometheusServer, tmp_path: Path) -> Iterator[World]:
    made = World(twin, prom, tmp_path / "faults.ledger.jsonl")
    try:
        yield made
    finally:
        made.applier.revert_all()
        made.close()


def _entry(catalog_id: str) -> Entry:
    return load_catalog(OB).by_id[catalog_id]


def _injected(world: World, entry: Entry, fault_id: str) -> Applied:
    result = world.applier.inject(entry, fault_id=fault_id)
    assert isinstance(result, Applied), result
    return result


def _differences(before: Any, after: Any, path: str = "") -> list[str]:
    """Every field path where two JSON documents differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in sorted(set(before) | set(after)):
            found += _differences(before.get(key), after.get(key), f"{path}.{key}")
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            d
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            for d in _differences(b, a, f"{path}[{i}]")
        ]
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


@pytest.mark.parametrize(
    ("catalog_id", "workload"),
    [("ob-frontend-cart-divide-by-zero", "frontend"), ("ob-cart-redis-port", "cartservice")],
)
def test_a_code_or_config_fault_shows_its_symptom_and_its_revert_restores_the_deployment_exactly(
    world: World, catalog_id: str, workload: str
) -> None:
    entry = _entry(catalog_id)
    before = copy.deepcopy(world.deployment(workload))
    _injected(world, entry, f"{catalog_id}-t")
    changed = _differences(before, world.deployment(workload))
    assert changed, "the injection changed nothing"
    world.twin.advance(180)
    assert world.unhealthy(entry)
    assert world.printed(entry, seconds=180)
    assert world.applier.revert(f"{catalog_id}-t") == "reverted"
    assert _differences(before, world.deployment(workload)) == []
    world.twin.advance(180)
    assert not world.unhealthy(entry)


def test_a_chaos_fault_shows_its_symptom_and_its_revert_leaves_no_chaos_object(world: World) -> None:
    entry = _entry("ob-cart-redis-latency")
    before = world.deployment("cartservice")
    assert world.chaos_objects() == []
    handle = _injected(world, entry, "latency-t").handle
    assert world.chaos_objects() == [handle.name]
    world.twin.advance(180)
    assert world.unhealthy(entry)
    assert world.printed(entry, seconds=180)
    assert world.applier.revert("latency-t") == "reverted"
    assert world.chaos_objects() == []
    assert _differences(before, world.deployment("cartservice")) == []
    world.twin.advance(180)
    assert not world.unhealthy(entry)


def test_two_faults_on_one_deployment_each_revert_only_their_own_field(world: World) -> None:
    code, config = _entry("ob-cart-additem-null-cart"), _entry("ob-cart-redis-port")
    pristine = copy.deepcopy(world.deployment("cartservice"))
    _injected(world, code, "code-t")
    with_code = copy.deepcopy(world.deployment("cartservice"))
    release = [d.split(":", 1)[0] for d in _differences(pristine, with_code)]
    assert release == [".change-cause", ".spec.template.spec.containers[0].image"]
    _injected(world, config, "config-t")
    both = world.deployment("cartservice")
    env = ".spec.template.spec.containers[0].env[0].value: 'redis-cart:6379' -> 'redis-cart:6380'"
    assert _differences(with_code, both) == [env]
    world.twin.advance(60)
    assert world.applier.revert("code-t") == "reverted"
    only_config = world.deployment("cartservice")
    assert (
        only_config["spec"]["template"]["spec"]["containers"][0]["image"]
        == (pristine["spec"]["template"]["spec"]["containers"][0]["image"])
    )
    assert _differences(pristine, only_config) == [env]
    assert world.applier.revert("config-t") == "reverted"
    assert _differences(pristine, world.deployment("cartservice")) == []
