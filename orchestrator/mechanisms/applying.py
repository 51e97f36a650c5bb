"""Carrying out injections and reverts with the ledger written first, failures isolated, reverts retried.

The applier also knows the state its reverts left: each reverted change of one field (code and config
faults) is remembered with its pre-fault value. ``reconcile`` compares those fields with the cluster: a field
that holds its fault's value again was put back by someone else's change (an agent's rollback to the faulty
revision at the instant of the revert), an untracked fault, so it is restored and reported; a field holding a
third value is an agent's deliberate change, reported and left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from orchestrator.catalog.faults import Entry
from orchestrator.cluster.fields import read_field
from orchestrator.errors import InjectionError, OrchestratorError, RevertError
from orchestrator.mechanisms.field_changes import FieldChange
from orchestrator.mechanisms.handles import Context, Handle, RevertOutcome, same
from orchestrator.mechanisms.ledger import Ledger
from orchestrator.mechanisms.registry import MECHANISMS, mechanism_of


@dataclass(frozen=True)
class Applied:
    handle: Handle


@dataclass(frozen=True)
class InjectFailed:
    fault_id: str
    error: str
    handle: Handle | None


@dataclass(frozen=True)
class Drift:
    """A reverted fault's field that no longer holds the value its revert left (see the module doc)."""

    handle: Handle
    found: str
    action: Literal["restored", "left"]


def _key(handle: Handle) -> tuple[str, str, str, str, str]:
    return (handle.kind, handle.namespace, handle.name, handle.field or "", handle.container or "")


@dataclass
class Applier:
    """Applies faults to one cluster. An injection that fails is recorded and reverted; the run goes on."""

    ctx: Context
    ledger: Ledger
    revert_attempts: int = 4
    active: dict[str, Handle] = field(default_factory=dict)
    # The last reverted field change per (object, field): what the cluster should hold there now.
    settled: dict[tuple[str, str, str, str, str], Handle] = field(default_factory=dict)

    def inject(self, entry: Entry, *, fault_id: str) -> Applied | InjectFailed:
        mechanism = mechanism_of(entry)
        try:
            handle = mechanism.plan(entry, self.ctx, fault_id=fault_id)
        except OrchestratorError as exc:
            self.ledger.inject_failed(fault_id, str(exc))
            return InjectFailed(fault_id, str(exc), None)
        self.ledger.planned(handle)
        self.active[fault_id] = handle
        try:
            mechanism.apply(handle, entry, self.ctx)
        except OrchestratorError as exc:
            self.ledger.inject_failed(fault_id, str(exc))
            self.revert(fault_id)
            return InjectFailed(fault_id, str(exc), handle)
        self.ledger.applied(fault_id)
        return Applied(handle)

    def revert(self, fault_id: str) -> RevertOutcome:
        """Revert one active fault, retrying with backoff; raise ``RevertError`` when it cannot."""
        handle = self.active[fault_id]
        outcome = revert_handle(handle, self.ctx, ledger=self.ledger, attempts=self.revert_attempts)
        del self.active[fault_id]
        if isinstance(MECHANISMS[handle.mechanism], FieldChange) and handle.field is not None:
            self.settled[_key(handle)] = handle
        return outcome

    def reconcile(self, entry: Entry | None = None) -> list[Drift]:
        """Compare the fields earlier reverts restored with the cluster (those of ``entry``'s object before
        it is injected, or all of them); restore a field that holds its fault's value again, and report a
        field an agent set to a third value. Side effects: reads and patches of the cluster, the ledger."""
        where = None
        if entry is not None:
            ref = mechanism_of(entry).changed_object(entry, self.ctx.namespace)
            if ref is None:
                return []
            where = (ref.kind, ref.namespace, ref.name)
        held = {_key(h) for h in self.active.values()}
        drifts: list[Drift] = []
        for key, handle in sorted(self.settled.items()):
            if key in held or (where is not None and key[:3] != where):
                continue  # a live fault owns the field now, or another object
            mechanism = MECHANISMS[handle.mechanism]
            assert isinstance(mechanism, FieldChange) and handle.field is not None
            try:
                current = read_field(
                    self.ctx.client.read(handle.ref), field=handle.field, container=handle.container
                )
            except (InjectionError, OrchestratorError):
                continue  # the object or its container is gone: nothing a revert can put back
            if same(current, handle.pre_value):
                continue
            if same(current, handle.injected_value):
                mechanism.restore(handle, self.ctx)
                drift = Drift(handle, "" if current is None else str(current), "restored")
            elif entry is not None:
                continue  # a deliberate change is reported once, at the end
            else:
                drift = Drift(handle, "" if current is None else str(current), "left")
            self.ledger.drift(handle.fault_id, found=drift.found, action=drift.action)
            drifts.append(drift)
        return drifts

    def revert_all(self) -> dict[str, RevertOutcome | str]:
        """Revert every active fault, newest first; a fault that cannot be reverted is named, not skipped."""
        results: dict[str, RevertOutcome | str] = {}
        for fault_id in reversed(list(self.active)):
            try:
                results[fault_id] = self.revert(fault_id)
            except RevertError as exc:
                results[fault_id] = f"FAILED: {exc}"
        return results


def revert_handle(handle: Handle, ctx: Context, *, ledger: Ledger, attempts: int) -> RevertOutcome:
    mechanism = MECHANISMS[handle.mechanism]
    last = ""
    for attempt in range(attempts):
        try:
            outcome = mechanism.revert(handle, ctx)
        except OrchestratorError as exc:
            last = str(exc)
            ledger.revert_failed(handle.fault_id, last)
            for _ in range(2**attempt):  # back off: 1, 2, 4 ticks of the world
                ctx.settle()
            continue
        ledger.reverted(handle.fault_id, outcome)
        return outcome
    left = f"{handle.kind} {handle.name} in {handle.namespace}" + (
        f" field {handle.field}" if handle.field else ""
    )
    raise RevertError(
        f"fault {handle.fault_id} ({handle.catalog_id}) could not be reverted: {last}; left behind: {left}"
    )
