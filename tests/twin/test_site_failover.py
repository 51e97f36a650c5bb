"""Astronomy Shop's two sites on the twin: the shop runs in the active site's zone; when every node of that
zone is drained (and has been for a minute) the failover moves it to the standby site, where it serves again;
one drained node is not a site outage."""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.catalog.manifests import ZONE_LABEL
from orchestrator.twin.boot import Twin
from orchestrator.twin.failover import DOWN_FOR_S
from orchestrator.twin.store import DEPLOYMENTS, EVENTS, NODES, PODS

AS = "astronomy-shop"


def _warm(twin: Twin) -> None:
    for _ in range(120):
        if not unavailable(twin):
            return
        twin.advance(10)
    raise AssertionError(f"the shop never became available: {unavailable(twin)}")


def unavailable(twin: Twin) -> list[str]:
    """The shop's Deployments with fewer available replicas than they want."""
    with twin.cluster.lock:
        deployments = twin.cluster.store.list(DEPLOYMENTS, twin.namespace)
    return sorted(
        d["metadata"]["name"]
        for d in deployments
        if (d.get("status", {}).get("availableReplicas") or 0) < d["spec"].get("replicas", 1)
    )


def _zone_of_nodes(twin: Twin) -> dict[str, str]:
    return {
        n["metadata"]["name"]: n["metadata"]["labels"][ZONE_LABEL] for n in twin.cluster.store.list(NODES)
    }


def _drain(twin: Twin, node_name: str) -> None:
    """``kubectl drain``: cordon the node, then evict the app's pods on it."""
    with twin.cluster.lock:
        node: dict[str, Any] = copy.deepcopy(twin.cluster.store.get(NODES, "", node_name))
        node.setdefault("spec", {})["unschedulable"] = True
        twin.cluster.store.replace(NODES, node)
        for pod in twin.cluster.store.list(PODS, twin.namespace):
            if pod["spec"].get("nodeName") == node_name:
                twin.cluster.delete_pod(twin.namespace, pod["metadata"]["name"])


def _zones_running(twin: Twin) -> set[str]:
    zones = _zone_of_nodes(twin)
    with twin.cluster.lock:
        pods = twin.cluster.store.list(PODS, twin.namespace)
    return {
        zones[p["spec"]["nodeName"]]
        for p in pods
        if p["spec"].get("nodeName") and p["status"].get("phase") == "Running"
    }


def test_the_shop_fails_over_to_the_standby_site_when_the_active_site_is_down() -> None:
    twin = Twin(AS, seed=3)
    assert twin.failover is not None and twin.failover.active_zone == "zone-a"
    _warm(twin)
    assert _zones_running(twin) == {"zone-a"}  # the standby's nodes hold none of the shop
    active = sorted(name for name, zone in _zone_of_nodes(twin).items() if zone == "zone-a")
    _drain(twin, active[0])
    twin.advance(300)
    assert twin.failover.failovers == 0  # one node of the site still runs pods: no outage, no failover
    assert not unavailable(twin)
    _drain(twin, active[1])
    twin.advance(DOWN_FOR_S - 5)
    assert twin.failover.failovers == 0  # the site is down, but its health checks have not declared it yet
    assert _zones_running(twin) <= {"zone-a"}
    twin.advance(10)
    assert twin.failover.failovers == 1 and twin.failover.active_zone == "zone-b"
    with twin.cluster.lock:
        deployments = twin.cluster.store.list(DEPLOYMENTS, twin.namespace)
        reasons = [
            e for e in twin.cluster.store.list(EVENTS, twin.namespace) if e.get("reason") == "SiteFailover"
        ]
    pinned = {d["spec"]["template"]["spec"].get("nodeSelector", {}).get(ZONE_LABEL) for d in deployments}
    assert pinned <= {"zone-b", None} and len(reasons) == sum(
        1 for d in deployments if d["spec"]["template"]["spec"].get("nodeSelector")
    )
    _warm(twin)  # the standby site brings every service up again
    assert _zones_running(twin) == {"zone-b"}
    twin.advance(600)
    assert twin.failover.failovers == 1  # no failback once the first site's nodes are cordoned still
