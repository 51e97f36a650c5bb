"""Failover between an app's sites: Astronomy Shop runs an active site in one zone and a standby in the other.

The active site's services are pinned to its zone (a ``nodeSelector`` on the zone label, rendered from the
topology's ``sites``); the standby's nodes hold no pods of the app. When no node of the active zone can run a
pod any more (every one is NotReady or cordoned: the site is down) and has stayed so for ``DOWN_FOR_S``, the
failover moves every Deployment pinned there to the standby's zone, as a site operator's failover does: a
new rollout of each, recorded as a Warning event ``SiteFailover`` on the Deployment, after which the standby
is the active site. It never fails back by itself: once the first site is back, it is the standby. Nothing
happens while any node of the active zone can run pods (a single drained node is not a site outage), or when
the standby's zone has no usable node either.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from orchestrator.catalog.manifests import ZONE_LABEL
from orchestrator.catalog.topology import Topology
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.store import DEPLOYMENTS, NODES

Obj = dict[str, Any]
# How long the active site is down before the failover starts: the site's health checks must fail for a
# minute before the operator's automation declares it down, so the shop is unreachable meanwhile.
DOWN_FOR_S = 60.0


def usable(node: Obj) -> bool:
    """Whether the scheduler may place pods on ``node``: Ready and not cordoned (no side effects)."""
    if node.get("spec", {}).get("unschedulable"):
        return False
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _zone(node: Obj) -> str:
    return str((node.get("metadata", {}).get("labels") or {}).get(ZONE_LABEL, ""))


@dataclass
class SiteFailover:
    """The sites' roles as they stand, and the move from the active to the standby when the active is down."""

    active_zone: str
    standby_zone: str
    failovers: int = 0
    down_since: float | None = None  # when the active site was last found down, until it is up again

    @classmethod
    def of(cls, topology: Topology) -> SiteFailover | None:
        """The failover of a topology with an active and a standby site; None for an app with no sites."""
        active = next((s for s in topology.sites if s.role == "active"), None)
        standby = next((s for s in topology.sites if s.role == "standby"), None)
        if active is None or standby is None:
            return None
        return cls(active_zone=active.zone, standby_zone=standby.zone)

    def step(self, cluster: Cluster, namespace: str, now: float) -> bool:
        """Fail over when the active site has been down for ``DOWN_FOR_S``; True when it did. Call under
        ``cluster.lock``."""
        nodes = cluster.store.list(NODES)
        active = [n for n in nodes if _zone(n) == self.active_zone]
        if not active or any(usable(n) for n in active):
            self.down_since = None
            return False
        if self.down_since is None:
            self.down_since = now
        if now - self.down_since < DOWN_FOR_S:
            return False
        if not any(usable(n) for n in nodes if _zone(n) == self.standby_zone):
            return False  # nowhere to go: both sites are down
        for deployment in cluster.store.list(DEPLOYMENTS, namespace):
            selector = (
                deployment.get("spec", {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}
            )
            if selector.get(ZONE_LABEL) != self.active_zone:
                continue
            moved = copy.deepcopy(deployment)
            moved["spec"]["template"]["spec"]["nodeSelector"][ZONE_LABEL] = self.standby_zone
            stored = cluster.store.replace(DEPLOYMENTS, moved)
            message = (f"site in {self.active_zone} is down (no node can run pods): moved to the standby "
                       f"site in {self.standby_zone}")  # fmt: skip
            cluster.events.record(involved=stored, reason="SiteFailover", message=message, now=now,
                                  type_="Warning", component="site-failover")  # fmt: skip
        self.active_zone, self.standby_zone = self.standby_zone, self.active_zone
        self.down_since = None
        self.failovers += 1
        return True
