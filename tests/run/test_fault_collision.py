"""An agent's change that collides with a benchmark fault, on the twin: the runner notices and leaves no
untracked fault behind.

The case from a marathon: an agent rolled a Deployment back ("the previous revision") at the instant the
benchmark reverted a config fault, which put the faulty revision back; the next injection on that service
failed with "already has env/...", and the fault stayed in the cluster, tracked by nobody.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.records import FaultFailed, FaultInjected, Record, StateDrift
from orchestrator.catalog.loading import load_catalog
from orchestrator.cluster.fields import read_field
from orchestrator.mechanisms.applying import Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.run.faults import FaultDriver
from orchestrator.schedule import Activation
from tests.interface.world import World, running_world

OB = "online-boutique"
CATALOG = load_catalog(OB)
ENTRY = CATALOG.by_id["ob-cart-redis-port"]  # env/REDIS_ADDR of cartservice, a new revision
GOOD = "redis-cart:6379"


class Events:
    def handle(self, event: object) -> None:
        del event


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with running_world(OB, directory=tmp_path) as made:
        yield made


def _driver(world: World, ledger_path: Path) -> tuple[FaultDriver, list[Record]]:
    ctx = Context(
        client=world.kube, namespace=OB, chaos_namespace="chaos-mesh", settle=lambda: world.advance(5)
    )
    ledger = Ledger(ledger_path)
    ledger.open(Target(kubeconfig=str(world.twin.kubeconfig), namespace=OB, chaos_namespace="chaos-mesh"))
    records: list[Record] = []
    driver = FaultDriver(
        applier=Applier(ctx=ctx, ledger=ledger), catalog=CATALOG, namespace=OB, record=records.append,
        now_s=world.now_s, events=Events(), warn=lambda message: None,  # type: ignore[arg-type]
    )  # fmt: skip
    return driver, records


def _activation(index: int) -> Activation:
    return Activation(
        index=index, arrival=index, at_s=60 + 300 * index, duration_s=240, catalog_id=ENTRY.id,
        category=ENTRY.category, mechanism=str(ENTRY.mechanism), target=ENTRY.target,
    )  # fmt: skip


def _redis_addr(world: World) -> Any:
    return read_field(world.deployment("cartservice"), field="env/REDIS_ADDR", container="server")


def test_a_rollback_that_revives_the_faulty_revision_is_caught_before_the_next_injection(
    world: World, tmp_path: Path
) -> None:
    driver, records = _driver(world, tmp_path / "faults.ledger.jsonl")
    assert _redis_addr(world) == GOOD
    assert driver.inject(_activation(0)) is not None
    world.advance(60)
    faulty = _redis_addr(world)
    assert faulty != GOOD
    # The benchmark reverts; at the same boundary the agent rolls back to "the previous revision", which is
    # now the faulty one (as ``kubectl rollout undo`` would).
    driver.revert("f000")
    assert _redis_addr(world) == GOOD
    world.advance(5)  # the controller records the revert's rollout: the faulty revision is now "previous"
    undo = world.caller().call("rollback_service", {"incident_id": "inc-1", "service": "cartservice"})
    assert undo["ok"], undo
    world.advance(30)
    assert _redis_addr(world) == faulty, "the agent's rollback put the fault back, untracked"

    second = driver.inject(_activation(1))
    assert second is not None, [r for r in records if isinstance(r, FaultFailed)]
    drifts = [r for r in records if isinstance(r, StateDrift)]
    assert [(d.fault_id, d.field, d.found, d.expected, d.action) for d in drifts] == [
        ("f000", "env/REDIS_ADDR", faulty, GOOD, "restored")
    ]
    truth = [r for r in records if isinstance(r, FaultInjected)]
    assert truth[-1].pre_value == GOOD, "the second fault starts from the pre-fault state"
    world.advance(60)
    driver.revert("f001")
    assert driver.revert_all() == []
    assert _redis_addr(world) == GOOD
    assert len([r for r in records if isinstance(r, StateDrift)]) == 1, "nothing untracked is left at the end"


def test_an_agents_deliberate_change_after_a_revert_is_reported_and_left(
    world: World, tmp_path: Path
) -> None:
    driver, records = _driver(world, tmp_path / "faults.ledger.jsonl")
    assert driver.inject(_activation(0)) is not None
    world.advance(60)
    driver.revert("f000")
    chosen = "redis-cart.online-boutique:6379"
    change = world.caller().call(
        "update_config", {"incident_id": "inc-1", "service": "cartservice", "env": {"REDIS_ADDR": chosen}}
    )
    assert change["ok"], change
    assert driver.revert_all() == []
    (drift,) = [r for r in records if isinstance(r, StateDrift)]
    assert (drift.found, drift.expected, drift.action) == (chosen, GOOD, "left")
    assert _redis_addr(world) == chosen
