"""What a run's events change in its registry row: its progress, its counts and its active faults. One tally
serves a run the control plane's worker drives and a run started from the command line (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.run.events import Boundary, Concurrency, Failed, Injected, Invoked, Reverted, RunEvent


@dataclass
class RowTally:
    active: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)

    def updates(self, event: RunEvent) -> dict[str, Any]:
        """The registry columns ``event`` changes, with their new values."""
        match event:
            case Injected(fault_id=fault_id):
                self.active.add(fault_id)
                return {"injections": self._count("injections"), "active_faults": sorted(self.active)}
            case Reverted(fault_id=fault_id):
                self.active.discard(fault_id)
                return {"reverts": self._count("reverts"), "active_faults": sorted(self.active)}
            case Failed():
                return {"failures": self._count("failures")}
            case Invoked():
                return {"invocations": self._count("invocations")}
            case Boundary(k=k, of=of, t=t):
                return {"boundary": k, "boundaries": of, "schedule_t": t}
            case Concurrency(firing=firing):
                return {"firing": firing}
        return {}

    def _count(self, key: str) -> int:
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key]


def end_updates(outcome: tuple[str, Any] | None, tally: RowTally) -> tuple[str, dict[str, Any]]:
    """The run's final status and registry columns from its runner's outcome: ``("result", {...})`` as
    ``orchestrator.api.workers`` sends it, ``("error", message)``, or None when nothing was heard."""
    if outcome is not None and outcome[0] == "result":
        result = outcome[1]
        status = "finished" if result["reason"] == "completed" else "stopped"
        return status, {
            "status": status, "reason": result["reason"], "score": result["score"] or None,
            "runner_run_id": result["run_id"], "active_faults": [],
        }  # fmt: skip
    error = outcome[1] if outcome is not None else "the worker process ended without a result"
    return "failed", {
        "status": "failed", "reason": "error", "error": str(error)[:4000],
        "active_faults": [] if outcome is None else sorted(tally.active),
    }  # fmt: skip
