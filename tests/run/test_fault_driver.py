"""The fault driver journals ground truth on injection, failed injections, and every kind of revert."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.bundle.records import FaultFailed, FaultInjected, FaultReverted, Record
from orchestrator.catalog.loading import load_catalog
from orchestrator.errors import RevertError
from orchestrator.mechanisms.applying import Applied, Applier, InjectFailed
from orchestrator.mechanisms.handles import Handle
from orchestrator.run.events import Failed, Injected, Reverted, RunEvent
from orchestrator.run.faults import FaultDriver, fault_id_of
from orchestrator.schedule import Activation

CATALOG = load_catalog("online-boutique")


@dataclass
class FakeApplier:
    """Stands in for the cluster: injections succeed unless listed, reverts answer from a script."""

    failing: set[str] = field(default_factory=set)
    revert_script: dict[str, list[Any]] = field(default_factory=dict)
    active: dict[str, Handle] = field(default_factory=dict)

    def inject(self, entry: Any, *, fault_id: str) -> Applied | InjectFailed:
        handle = Handle(fault_id=fault_id, catalog_id=entry.id, mechanism=entry.mechanism, kind="Deployment",
                        namespace="online-boutique", name=entry.target, field="image", pre_value="img:1",
                        injected_value="img:2")  # fmt: skip
        if entry.id in self.failing:
            return InjectFailed(fault_id, "the API refused the patch", handle)
        self.active[fault_id] = handle
        return Applied(handle)

    def revert(self, fault_id: str) -> str:
        answer = self.revert_script.get(fault_id, ["reverted"]).pop(0)
        if isinstance(answer, Exception):
            raise answer
        del self.active[fault_id]
        return str(answer)

    revert_all = Applier.revert_all  # the real loop over this fake's revert()

    def reconcile(self, entry: Any = None) -> list[Any]:
        return []  # the cluster is as the reverts left it


@dataclass
class Events:
    seen: list[RunEvent] = field(default_factory=list)

    def handle(self, event: RunEvent) -> None:
        self.seen.append(event)


def _driver(applier: FakeApplier) -> tuple[FaultDriver, list[Record], list[RunEvent]]:
    records: list[Record] = []
    events = Events()
    driver = FaultDriver(
        applier=applier,  # type: ignore[arg-type]
        catalog=CATALOG, namespace="online-boutique", record=records.append, now_s=lambda: 240.0,
        events=events, warn=lambda message: None,
    )  # fmt: skip
    return driver, records, events.seen


def _activation(index: int, catalog_id: str) -> Activation:
    entry = CATALOG.by_id[catalog_id]
    return Activation(
        index=index, arrival=index, at_s=240, duration_s=360, catalog_id=catalog_id, category=entry.category,
        mechanism=str(entry.mechanism), target=entry.target,
    )  # fmt: skip


def test_an_injection_journals_its_ground_truth_with_the_scope_from_the_topology() -> None:
    driver, records, events = _driver(FakeApplier())
    entry = CATALOG.entries[0]
    live = driver.inject(_activation(3, entry.id))
    assert live is not None and live.fault_id == fault_id_of(_activation(3, entry.id)) == "f003"
    (truth,) = records
    assert isinstance(truth, FaultInjected)
    assert truth.catalog_id == entry.id
    assert truth.culprits == sorted(entry.culprits)
    assert truth.artifact == entry.artifact
    assert truth.scope == sorted(CATALOG.scope(entry))
    assert (truth.inject_s, truth.planned_revert_s) == (240.0, 600.0)
    assert (truth.pre_value, truth.injected_value) == ("img:1", "img:2")
    category, target = str(entry.category), entry.target
    assert events == [Injected(fault_id="f003", catalog_id=entry.id, t=240, category=category, target=target)]


def test_a_failed_injection_is_journaled_as_failed_and_not_kept_live() -> None:
    entry = CATALOG.entries[1]
    driver, records, events = _driver(FakeApplier(failing={entry.id}))
    assert driver.inject(_activation(0, entry.id)) is None
    assert [type(r) for r in records] == [FaultInjected, FaultFailed]
    assert "refused" in records[1].error  # type: ignore[union-attr]
    assert not driver.live
    assert events == [
        Failed(operation="injection", error="the API refused the patch", fault_id="f000", catalog_id=entry.id)
    ]


def test_a_revert_that_fails_keeps_the_fault_live_until_the_final_revert_succeeds() -> None:
    entry = CATALOG.entries[2]
    applier = FakeApplier(revert_script={"f000": [RevertError("API down"), "reverted"]})
    driver, records, events = _driver(applier)
    driver.inject(_activation(0, entry.id))
    driver.revert("f000")
    assert "f000" in driver.live
    assert events[-1] == Failed(operation="revert", error="API down", fault_id="f000", catalog_id=entry.id)
    failed = records[-1]
    assert isinstance(failed, FaultReverted) and failed.outcome == "failed" and "API down" in failed.detail
    assert driver.revert_all() == []
    closed = records[-1]
    assert isinstance(closed, FaultReverted) and closed.outcome == "reverted"
    assert not driver.live
    assert events[-1] == Reverted(fault_id="f000", t=240.0, outcome="reverted")


def test_a_value_the_agent_changed_ends_the_fault_without_being_overwritten() -> None:
    entry = CATALOG.entries[3]
    driver, records, _ = _driver(FakeApplier(revert_script={"f000": ["changed_by_agent"]}))
    driver.inject(_activation(0, entry.id))
    driver.revert("f000")
    closed = records[-1]
    assert isinstance(closed, FaultReverted)
    assert closed.outcome == "already_restored"
    assert "agent" in closed.detail


def test_faults_that_cannot_be_reverted_at_the_end_are_named() -> None:
    entry = CATALOG.entries[4]
    failure = RevertError("still there")
    driver, _, _ = _driver(FakeApplier(revert_script={"f000": [failure, failure]}))
    driver.inject(_activation(0, entry.id))
    left = driver.revert_all()
    assert len(left) == 1 and left[0].startswith("f000: FAILED")
