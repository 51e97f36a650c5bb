"""The revert ledger: an append-only, fsynced JSON Lines file of every planned, applied and reverted fault.

A fault's revert handle is on disk before the fault touches the cluster, so after a crash or ``kill -9``
``marathon recover --journal PATH`` knows exactly what to undo.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from orchestrator.errors import BundleError
from orchestrator.mechanisms.handles import Handle

Event = Literal["opened", "planned", "applied", "reverted", "revert_failed", "inject_failed", "drift"]
# A fault is settled once reverted (or found restored, or left to the agent's later change).
SETTLED = frozenset({"reverted", "already_restored", "changed_by_agent"})


class Target(BaseModel):
    """Where the faults of this ledger live, so recovery needs nothing else."""

    model_config = ConfigDict(frozen=True)

    kubeconfig: str
    namespace: str
    chaos_namespace: str


class Ledger:
    """Appends one JSON record per line and fsyncs it before returning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")

    def _append(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def open(self, target: Target) -> None:
        self._append({"event": "opened", "target": target.model_dump()})

    def planned(self, handle: Handle) -> None:
        self._append({"event": "planned", "handle": handle.model_dump(mode="json")})

    def applied(self, fault_id: str) -> None:
        self._append({"event": "applied", "fault_id": fault_id})

    def inject_failed(self, fault_id: str, error: str) -> None:
        self._append({"event": "inject_failed", "fault_id": fault_id, "error": error})

    def reverted(self, fault_id: str, outcome: str) -> None:
        self._append({"event": "reverted", "fault_id": fault_id, "outcome": outcome})

    def revert_failed(self, fault_id: str, error: str) -> None:
        self._append({"event": "revert_failed", "fault_id": fault_id, "error": error})

    def drift(self, fault_id: str, *, found: str, action: str) -> None:
        """A reverted fault's field found changed: its value put back (``restored``) or ``left``."""
        self._append({"event": "drift", "fault_id": fault_id, "found": found, "action": action})

    def close(self) -> None:
        self._file.close()


def read(path: Path) -> tuple[Target, list[Handle]]:
    """The ledger's target and the handles of faults not yet settled, in injection order (no side effects).

    A torn last line (the process died mid-write) is ignored: its fault never reached the cluster, because
    the handle is written before the fault is applied.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BundleError(f"{path}: cannot read the revert ledger: {exc.strerror}") from exc
    target: Target | None = None
    handles: dict[str, Handle] = {}
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                break
            raise BundleError(f"{path}:{number}: not a JSON record") from exc
        try:
            if record["event"] == "opened":
                target = Target.model_validate(record["target"])
            elif record["event"] == "planned":
                handle = Handle.model_validate(record["handle"])
                handles[handle.fault_id] = handle
            elif record["event"] == "reverted" and record["outcome"] in SETTLED:
                handles.pop(record["fault_id"], None)
        except (KeyError, ValidationError) as exc:
            raise BundleError(f"{path}:{number}: malformed ledger record: {exc}") from exc
    if target is None:
        raise BundleError(f"{path}: the ledger has no 'opened' record naming its cluster")
    return target, list(handles.values())
