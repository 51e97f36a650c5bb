"""Injecting and reverting the scheduled faults, journaling the ground truth of each.

Every injection writes ``FaultInjected`` (catalog id, category, mechanism, namespace, target, culprits,
artifact (as the injection found it where the entry leaves part of it to the cluster: the zone a site outage
took down), pre and injected values, and the scope: the target's from the topology, widened by the scope of
each service the fault acts on besides it, such as the other pods of a drained node); a failed one adds
``FaultFailed`` and is reverted; every revert writes ``FaultReverted``. A revert that fails is reported loudly
and the fault stays live (the scorer keeps it live to the run end) until the final ``revert_all`` manages it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import get_args

from orchestrator.bundle.records import FaultFailed, FaultInjected, FaultReverted, Record, StateDrift
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import Catalog
from orchestrator.errors import OrchestratorError, RevertError
from orchestrator.mechanisms.applying import Applied, Applier, Drift
from orchestrator.mechanisms.handles import Handle, RevertOutcome
from orchestrator.run.events import Failed, Injected, Reverted, RunEventHandler
from orchestrator.schedule import Activation

OUTCOMES: frozenset[str] = frozenset(get_args(RevertOutcome))


def fault_id_of(activation: Activation) -> str:
    """Short and DNS-safe: chaos objects are named after it (no side effects)."""
    return f"f{activation.index:03d}"


def _text(value: object) -> str:
    return "" if value is None else str(value)


@dataclass
class LiveFault:
    fault_id: str
    activation: Activation
    entry: Entry
    handle: Handle
    inject_s: float
    scope: tuple[str, ...]


@dataclass
class FaultDriver:
    """Applies the schedule's activations through the ``Applier`` and journals each step."""

    applier: Applier
    catalog: Catalog
    namespace: str
    record: Callable[[Record], object]
    now_s: Callable[[], float]
    events: RunEventHandler
    warn: Callable[[str], None]
    live: dict[str, LiveFault] = field(default_factory=dict)
    failed_reverts: dict[str, str] = field(default_factory=dict)
    # A service's own scope in the app's topology (the drivers of a run pass ``affected_scope``); a service
    # the topology does not know adds nothing.
    service_scope: Callable[[str], frozenset[str]] = lambda service: frozenset()

    def inject(self, activation: Activation) -> LiveFault | None:
        entry = self.catalog.by_id[activation.catalog_id]
        fault_id = fault_id_of(activation)
        self._drifted(self.applier.reconcile(entry))  # the target as the ledger expects it, first
        t = self.now_s()
        result = self.applier.inject(entry, fault_id=fault_id)
        handle = result.handle
        scope = tuple(sorted(self._scope(entry, handle.affected if handle else ())))
        truth = FaultInjected(
            fault_id=fault_id,
            catalog_id=entry.id,
            category=str(entry.category),
            mechanism=str(entry.mechanism),
            namespace=self.namespace,
            target=entry.target,
            culprits=list(entry.culprits),
            artifact=(handle.artifact if handle else None) or entry.artifact,
            scope=list(scope),
            inject_s=t,
            planned_revert_s=float(activation.end_s),
            pre_value=_text(handle.pre_value) if handle else "",
            injected_value=_text(handle.injected_value) if handle else "",
        )
        self.record(truth)
        if not isinstance(result, Applied):
            self.record(FaultFailed(fault_id=fault_id, t=self.now_s(), error=result.error))
            self.events.handle(
                Failed(operation="injection", error=result.error, fault_id=fault_id, catalog_id=entry.id)
            )
            self.warn(f"injection of {fault_id} ({entry.id}) failed: {result.error}")
            return None
        live = LiveFault(fault_id, activation, entry, result.handle, t, scope)
        self.live[fault_id] = live
        category = str(entry.category)
        self.events.handle(
            Injected(fault_id=fault_id, catalog_id=entry.id, t=t, category=category, target=entry.target)
        )
        return live

    def _scope(self, entry: Entry, affected: tuple[str, ...]) -> frozenset[str]:
        """The entry's scope from the topology, widened by the scope of every other service the fault acts on
        (the pods of a drained node): their users see the symptoms too."""
        scope = self.catalog.scope(entry)
        for service in affected:
            scope |= self.service_scope(service)
        return scope

    def revert(self, fault_id: str) -> None:
        live = self.live.get(fault_id)
        if live is None:
            return
        t = self.now_s()  # the fault ends when its revert starts, not once the revert has settled
        try:
            outcome = self.applier.revert(fault_id)
        except RevertError as exc:
            self._revert_failed(fault_id, str(exc))
            return
        except OrchestratorError as exc:  # the cluster answered unexpectedly: same as a failed revert
            self._revert_failed(fault_id, str(exc))
            return
        self._reverted(fault_id, outcome, t=t)

    def revert_all(self) -> list[str]:
        """Revert every fault still applied, newest first; returns what could not be reverted."""
        left: list[str] = []
        for fault_id, result in self.applier.revert_all().items():
            if result in OUTCOMES:
                self._reverted(fault_id, result)
            else:  # the applier names a revert it gave up on as "FAILED: <why>"
                self._revert_failed(fault_id, result)
                left.append(f"{fault_id}: {result}")
        self._drifted(self.applier.reconcile())  # no untracked fault stays behind
        return left

    def _drifted(self, drifts: list[Drift]) -> None:
        for drift in drifts:
            handle = drift.handle
            self.record(
                StateDrift(
                    fault_id=handle.fault_id, t=self.now_s(), object=f"{handle.kind}/{handle.name}",
                    field=handle.field or "", expected=_text(handle.pre_value), found=drift.found,
                    action=drift.action,
                )
            )  # fmt: skip
            what = (
                f"holds the fault's value again after its revert; restored to {_text(handle.pre_value)!r}"
                if drift.action == "restored"
                else f"was changed to {drift.found!r} after its revert (not by the benchmark); left as it is"
            )
            self.warn(f"{handle.kind}/{handle.name} {handle.field} ({handle.fault_id}) {what}")

    def _reverted(self, fault_id: str, outcome: str, *, t: float | None = None) -> None:
        # An agent's own change of the field (a different image or value) ends the fault as well: the
        # orchestrator leaves it in place and says so.
        detail = (
            "the agent had set a different value; left as it was" if outcome == "changed_by_agent" else ""
        )
        mapped = "reverted" if outcome == "reverted" else "already_restored"
        t = self.now_s() if t is None else t
        self.record(FaultReverted(fault_id=fault_id, t=t, outcome=mapped, detail=detail))
        self.live.pop(fault_id, None)
        self.failed_reverts.pop(fault_id, None)
        self.events.handle(Reverted(fault_id=fault_id, t=t, outcome=outcome))

    def _revert_failed(self, fault_id: str, error: str) -> None:
        if self.failed_reverts.get(fault_id) != error:
            self.record(FaultReverted(fault_id=fault_id, t=self.now_s(), outcome="failed", detail=error))
        self.failed_reverts[fault_id] = error
        live = self.live.get(fault_id)
        catalog_id = live.entry.id if live is not None else None
        self.events.handle(Failed(operation="revert", error=error, fault_id=fault_id, catalog_id=catalog_id))
        self.warn(f"REVERT FAILED for {fault_id}: {error}")
