"""The live events of a run, one frozen dataclass per event type; the handler the runner reports them to;
and their one JSON form, ``wire``, which the control plane's event log keeps and its SSE stream and dashboard
read.

The runner reports what it does (``RunEvent``); the control plane adds the run's life around them
(``ControlEvent``: started, stopping, finished, interrupted, and the entry point's error ratio read from the
journal). Events are for watching a run; the bundle, not this stream, is the record that is scored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, Protocol

AlertState = Literal["firing", "resolved"]
FailedOperation = Literal["injection", "revert", "observation", "baseline", "decoy"]


# What the runner reports.


@dataclass(frozen=True)
class Concurrency:
    """After boundary ``t``'s faults were applied and its alerts evaluated: live faults, firing alerts."""

    TYPE: ClassVar[str] = "concurrency"
    t: float
    active: int
    firing: int


@dataclass(frozen=True)
class Boundary:
    """Boundary ``k`` of ``of`` (at schedule time ``t``) is done: its agent invocation has returned."""

    TYPE: ClassVar[str] = "boundary"
    k: int
    of: int
    t: float


@dataclass(frozen=True)
class Invoked:
    """Agent invocation ``n`` ended; ``wall_s`` is how long it took on the wall clock (a runtime fact);
    ``tool_calls``: the requests it made of the tool server, refused ones included."""

    TYPE: ClassVar[str] = "invocation"
    n: int
    start_s: float
    end_s: float
    exit_code: int | None
    timed_out: bool
    wall_s: float
    tool_calls: int = 0


@dataclass(frozen=True)
class Injected:
    TYPE: ClassVar[str] = "injected"
    fault_id: str
    catalog_id: str
    t: float
    category: str
    target: str


@dataclass(frozen=True)
class Reverted:
    """A fault ended; ``outcome`` is the applier's (``changed_by_agent`` when the agent set another value)."""

    TYPE: ClassVar[str] = "reverted"
    fault_id: str
    t: float
    outcome: str


@dataclass(frozen=True)
class Failed:
    """Something the run went on without: an injection, a revert, the last observation, the baseline or a
    decoy.

    The fault and its catalog entry are named when the failure is a fault's, and None otherwise."""

    TYPE: ClassVar[str] = "failed"
    operation: FailedOperation
    error: str
    fault_id: str | None = None
    catalog_id: str | None = None


@dataclass(frozen=True)
class Ended:
    """The run's end (``RunEnded`` in the journal); ``unreverted``: the faults the cluster still holds."""

    TYPE: ClassVar[str] = "ended"
    t: float
    reason: str
    unreverted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Alert:
    """An alert started firing or resolved at ``t``."""

    TYPE: ClassVar[str] = "alert"
    alert_id: str
    rule: str
    state: AlertState
    service: str
    t: float


@dataclass(frozen=True)
class Identified:
    """The run has its id and its directory; nothing is written yet (a registry can record it now)."""

    TYPE: ClassVar[str] = "identified"
    run_id: str
    run_dir: str


@dataclass(frozen=True)
class Phase:
    """What the run is busy with before, between or after its boundaries (starting the world, waiting for
    its no-action baseline, scoring): so a watcher sees more than a bar that does not move."""

    TYPE: ClassVar[str] = "phase"
    name: str


RunEvent = (
    Identified | Phase | Concurrency | Boundary | Invoked | Injected | Reverted | Failed | Ended | Alert
)


# What the control plane adds around them.


@dataclass(frozen=True)
class Started:
    TYPE: ClassVar[str] = "started"
    app: str
    agent: str
    seed: int


@dataclass(frozen=True)
class Stopping:
    """The run was asked to stop; it reverts, seals and scores what it has."""

    TYPE: ClassVar[str] = "stopping"


@dataclass(frozen=True)
class Finished:
    """The worker is done; ``status`` is the run's final status in the registry."""

    TYPE: ClassVar[str] = "finished"
    status: str


@dataclass(frozen=True)
class Interrupted:
    """A server that died left the run active; the next one settled its faults as ``recovery`` says."""

    TYPE: ClassVar[str] = "interrupted"
    recovery: str


@dataclass(frozen=True)
class ServicePoint:
    """One entry-point sample the runner journaled: requests per second and the failed fraction at ``t``."""

    TYPE: ClassVar[str] = "service"
    t: float
    q: float
    e: float


ControlEvent = Started | Stopping | Finished | Interrupted | ServicePoint
Event = RunEvent | ControlEvent

EVENT_TYPES: tuple[str, ...] = tuple(
    kind.TYPE
    for kind in (
        Started, Identified, Phase, Stopping, Concurrency, Boundary, Invoked, Injected, Reverted, Failed,
        Alert, ServicePoint, Ended, Finished, Interrupted,
    )
)  # fmt: skip


class RunEventHandler(Protocol):
    """Whatever follows a run as it goes (the terminal's progress bar, the control plane's worker); one
    method, called on the runner's threads in the order things happen."""

    def handle(self, event: RunEvent) -> None: ...


class Ignore:
    """The handler of a run nobody watches."""

    def handle(self, event: RunEvent) -> None:
        return None


def wire(event: Event) -> dict[str, Any]:
    """The event's one JSON form, ``{"type": ..., fields...}`` (no side effects)."""
    body: dict[str, Any] = {"type": event.TYPE}
    for field in fields(event):
        value = getattr(event, field.name)
        body[field.name] = list(value) if isinstance(value, tuple) else value
    return body
