"""Carrying out injections and reverts with the ledger written first, failures isolated, reverts retried."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.catalog.faults import Entry
from orchestrator.errors import OrchestratorError, RevertError
from orchestrator.mechanisms.handles import Context, Handle, RevertOutcome
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


@dataclass
class Applier:
    """Applies faults to one cluster. An injection that fails is recorded and reverted; the run goes on."""

    ctx: Context
    ledger: Ledger
    revert_attempts: int = 4
    active: dict[str, Handle] = field(default_factory=dict)

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
        return outcome

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
