"""Astronomy Shop's site outage from the catalog, injected by the chaos mechanism on a served twin: every node
of the active site's zone is cordoned and the shop's pods there evicted; after the failover the shop serves
from the standby site again; the revert uncordons the zone, which stays the standby (no failback)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.manifests import ZONE_LABEL
from orchestrator.cluster.client import KubeClient
from orchestrator.mechanisms.applying import Applied, Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.mechanisms.registry import artifact_restored
from orchestrator.run.states import service_states
from orchestrator.twin.failover import DOWN_FOR_S
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.observe.telemetry import timestamp_ms
from orchestrator.twin.store import DEPLOYMENTS, EVENTS, PODS
from tests.twin.test_site_failover import unavailable

AS = "astronomy-shop"
ENTRY = "as-active-site-outage"
# The failover waits DOWN_FOR_S; the standby's pods then start within a minute.
RECOVERY_BOUND_S = DOWN_FOR_S + 60.0
_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>.*)\} (?P<value>\S+) (?P<ts>\d+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Shop:
    running: RunningTwin
    client: KubeClient
    applier: Applier

    @property
    def now(self) -> float:
        return self.running.twin.now

    def advance(self, seconds: float) -> None:
        self.running.advance(seconds)


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    running = start_twin(AS, seed=5, kubeconfig=tmp_path / "kubeconfig", keep_samples=True)
    client = KubeClient.from_kubeconfig(running.kubeconfig)
    namespace = running.twin.namespace
    ctx = Context(
        client=client, namespace=namespace, chaos_namespace="chaos-mesh", settle=lambda: running.advance(5)
    )
    ledger = Ledger(tmp_path / "faults.ledger.jsonl")
    ledger.open(Target(kubeconfig=str(running.kubeconfig), namespace=namespace, chaos_namespace="chaos-mesh"))
    try:
        yield Shop(running, client, Applier(ctx=ctx, ledger=ledger))
    finally:
        ledger.close()
        client.close()
        running.stop()


def _zones(shop: Shop) -> dict[str, str]:
    return {n["metadata"]["name"]: n["metadata"]["labels"][ZONE_LABEL] for n in shop.client.list_nodes()}


def _cordoned(shop: Shop) -> set[str]:
    return {n["metadata"]["name"] for n in shop.client.list_nodes() if n.get("spec", {}).get("unschedulable")}


def _unavailable(shop: Shop) -> list[str]:
    return unavailable(shop.running.twin)


def _zones_running(shop: Shop) -> set[str]:
    """The zones of the nodes where the shop's pods run and are ready."""
    zones, twin = _zones(shop), shop.running.twin
    with twin.cluster.lock:
        pods = twin.cluster.store.list(PODS, twin.namespace)
    return {zones[p["spec"]["nodeName"]] for p in pods if p["spec"].get("nodeName") and _ready(p)}


def _ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _pinned(shop: Shop) -> set[str | None]:
    twin = shop.running.twin
    with twin.cluster.lock:
        deployments = twin.cluster.store.list(DEPLOYMENTS, twin.namespace)
    return {(d["spec"]["template"]["spec"].get("nodeSelector") or {}).get(ZONE_LABEL) for d in deployments}


def _failover_events(shop: Shop) -> list[str]:
    twin = shop.running.twin
    with twin.cluster.lock:
        events = twin.cluster.store.list(EVENTS, twin.namespace)
    return sorted(e["involvedObject"]["name"] for e in events if e.get("reason") == "SiteFailover")


def _served(shop: Shop, start: float, end: float) -> tuple[float, float]:
    """Requests per second the entry point answered between two instants, and the share that failed: from
    its SERVER span counters in the twin's scrapes."""
    first, last = timestamp_ms(start), timestamp_ms(end)
    counts: dict[tuple[str, bool], dict[int, float]] = {}
    for line in shop.running.twin.telemetry.samples:
        if not line.startswith("traces_span_metrics_calls_total{"):
            continue
        found = _SAMPLE.match(line)
        assert found is not None, line
        labels = dict(_LABEL.findall(found["labels"]))
        ts = int(found["ts"])
        if labels.get("service_name") != "frontend-proxy" or labels.get("span_kind") != "SPAN_KIND_SERVER":
            continue
        if first <= ts <= last and found["value"] != "stale":
            key = (found["labels"], labels.get("status_code") == "STATUS_CODE_ERROR")
            counts.setdefault(key, {})[ts] = float(found["value"])
    total = errors = 0.0
    for (_, failed), series in counts.items():
        values = [series[ts] for ts in sorted(series)]
        grown = sum(max(0.0, b - a) for a, b in zip(values, values[1:], strict=False))
        total += grown
        errors += grown if failed else 0.0
    return total / (end - start), (errors / total if total else 0.0)


def test_a_site_outage_fails_the_shop_over_to_the_standby_and_its_revert_does_not_fail_back(
    shop: Shop,
) -> None:
    twin = shop.running.twin
    assert twin.failover is not None and twin.failover.active_zone == "zone-a"
    shop.advance(300)  # the shop warms up and serves
    assert not _unavailable(shop) and _zones_running(shop) == {"zone-a"}
    zone_a = {name for name, zone in _zones(shop).items() if zone == "zone-a"}
    start = service_states(shop.client, twin.namespace, moment="start", t=shop.now)
    t0 = shop.now
    rate_before, failed_before = _served(shop, t0 - 120, t0)
    assert rate_before > 5 and failed_before < 0.01

    applied = shop.applier.inject(load_catalog(AS).by_id[ENTRY], fault_id="f001")
    assert isinstance(applied, Applied)
    handle = applied.handle
    assert (handle.name, handle.artifact) == ("zone-a", "node:zone/zone-a")
    assert {"frontend-proxy", "frontend", "checkout", "kafka", "postgresql"} <= set(handle.affected)
    assert _cordoned(shop) == zone_a  # the whole site, and only it
    assert "zone-a" not in _zones_running(shop)
    assert artifact_restored(shop.client, handle) is False

    # The site is down: nothing serves until its health checks declare it so and the failover starts.
    shop.advance(t0 + DOWN_FOR_S - 10 - shop.now)
    assert twin.failover.failovers == 0 and not _zones_running(shop)
    rate_down, _ = _served(shop, t0 + 10, shop.now)
    assert rate_down < 0.2 * rate_before

    while _unavailable(shop) or _zones_running(shop) != {"zone-b"}:
        assert shop.now - t0 <= RECOVERY_BOUND_S, f"not serving from the standby: {_unavailable(shop)}"
        shop.advance(5)
    assert twin.failover.failovers == 1 and twin.failover.active_zone == "zone-b"
    assert _pinned(shop) == {"zone-b"}
    assert _failover_events(shop) == sorted(d for d in _deployments(shop))  # one SiteFailover each
    shop.advance(180)
    rate_after, failed_after = _served(shop, shop.now - 120, shop.now)
    assert rate_after > 0.8 * rate_before and failed_after < 0.02
    assert artifact_restored(shop.client, handle) is False  # serving elsewhere does not restore the site

    assert shop.applier.revert("f001") == "reverted"
    assert not _cordoned(shop) and artifact_restored(shop.client, handle) is True
    shop.advance(300)
    assert twin.failover.failovers == 1 and twin.failover.standby_zone == "zone-a"  # back as the standby
    assert _zones_running(shop) == {"zone-b"} and _pinned(shop) == {"zone-b"}
    assert not _unavailable(shop)
    # Where the workloads run is no setting of theirs: the run's end snapshot finds no collateral change.
    end = service_states(shop.client, twin.namespace, moment="end", t=shop.now)
    assert end.workloads == start.workloads


def _deployments(shop: Shop) -> list[str]:
    twin = shop.running.twin
    with twin.cluster.lock:
        return [d["metadata"]["name"] for d in twin.cluster.store.list(DEPLOYMENTS, twin.namespace)]


def test_the_next_outage_takes_down_the_site_the_shop_runs_in_then(shop: Shop) -> None:
    entry = load_catalog(AS).by_id[ENTRY]
    shop.advance(300)
    first = shop.applier.inject(entry, fault_id="f001")
    assert isinstance(first, Applied)
    shop.advance(DOWN_FOR_S + 60)
    assert shop.applier.revert("f001") == "reverted"
    shop.advance(120)
    assert _zones_running(shop) == {"zone-b"}
    again = shop.applier.inject(entry, fault_id="f002")
    assert isinstance(again, Applied)
    assert (again.handle.name, again.handle.artifact) == ("zone-b", "node:zone/zone-b")
    assert _cordoned(shop) == {name for name, zone in _zones(shop).items() if zone == "zone-b"}
    shop.advance(DOWN_FOR_S + 60)
    assert shop.running.twin.failover is not None and shop.running.twin.failover.failovers == 2
    assert _zones_running(shop) == {"zone-a"} and not _unavailable(shop)
    assert shop.applier.revert("f002") == "reverted" and not _cordoned(shop)
