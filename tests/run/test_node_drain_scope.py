"""A drained node takes down every pod on it, not only the target's: the fault's journaled scope holds the
scope of each service that had a pod there, so the alerts of those services are attributable to it (on the
twin, through the real applier and fault driver)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from orchestrator.bundle.records import FaultInjected, Record
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import affected_scope, known_scope
from orchestrator.mechanisms.applying import Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.run.faults import FaultDriver
from orchestrator.schedule import Activation
from tests.interface.world import running_world

TT = "train-ticket"
CATALOG = load_catalog(TT)
TOPOLOGY = load_topology(TT)
ENTRY = CATALOG.by_id["tt-order-node-drained"]
NODE = "marathon-worker3"


class Events:
    def handle(self, event: object) -> None:
        del event


def test_the_scope_of_a_drained_node_covers_every_service_that_ran_there(tmp_path: Path) -> None:
    with running_world(TT, directory=tmp_path) as world:
        world.advance(60)
        on_node = {
            pod["metadata"]["labels"]["app"]
            for pod in world.kube.list_pods(TT, selector="")
            if pod["spec"].get("nodeName") == NODE
        }
        assert ENTRY.target in on_node and len(on_node) > 1
        ctx = Context(
            client=world.kube, namespace=TT, chaos_namespace="chaos-mesh", settle=lambda: world.advance(5)
        )
        ledger = Ledger(tmp_path / "faults.ledger.jsonl")
        ledger.open(Target(kubeconfig=str(world.twin.kubeconfig), namespace=TT, chaos_namespace="chaos-mesh"))
        records: list[Record] = []
        driver = FaultDriver(
            applier=Applier(ctx=ctx, ledger=ledger), catalog=CATALOG, namespace=TT, record=records.append,
            now_s=world.now_s, events=Events(), warn=lambda message: None,  # type: ignore[arg-type]
            service_scope=partial(known_scope, TOPOLOGY),
        )  # fmt: skip
        activation = Activation(
            index=0, arrival=0, at_s=60, duration_s=240, catalog_id=ENTRY.id, category=ENTRY.category,
            mechanism=str(ENTRY.mechanism), target=ENTRY.target,
        )  # fmt: skip
        live = driver.inject(activation)
        assert live is not None
        assert set(live.handle.affected) == on_node
        truth = next(r for r in records if isinstance(r, FaultInjected))
        widened = frozenset().union(*(affected_scope(TOPOLOGY, service) for service in on_node))
        assert set(truth.scope) == set(CATALOG.scope(ENTRY)) | widened
        assert set(truth.scope) > set(CATALOG.scope(ENTRY))  # other services ran there, and their callers
        driver.revert_all()
        ledger.close()


def test_a_service_the_topology_does_not_know_widens_nothing() -> None:
    assert known_scope(TOPOLOGY, "not-a-service") == frozenset()
    assert known_scope(TOPOLOGY, ENTRY.target) == affected_scope(TOPOLOGY, ENTRY.target)
