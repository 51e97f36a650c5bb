"""One tool call end to end: validate, decide, execute within a deadline, journal; every failure a structured
error result.

The journal gets, per call: a ``ToolCall`` with the decision and its reason (always, also for a request the
server refused before any tool could run); a ``ForbiddenAttempt(blocked=True)`` when the policy forbade it;
an ``Intervention`` when a mutation was executed (result ok or error); an ``IncidentReport`` for an accepted
``incident_report``.

Each handler runs in a thread of its own and the caller waits for it until the call's deadline at most,
then answers ``deadline_exceeded``. A handler past its deadline is left to finish: a mutation that finishes
late is journaled when it finishes, and one still unfinished when the server stops is journaled then, its
outcome unknown. Calls take turns, but a turn ends at the deadline, so a handler that hangs delays a later
call by one deadline at most and never blocks the runner.

An invocation may send ``REQUEST_LIMIT`` requests of any kind; each one past it is refused (``rate_limited``)
and counted, and the count is journaled once, so a flood of requests cannot grow the journal without bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue, ValidationError

from orchestrator.bundle.records import ForbiddenAttempt, IncidentReport, Intervention, Record, ToolCall
from orchestrator.errors import OrchestratorError
from orchestrator.interface import args as a
from orchestrator.interface.backend import Backend
from orchestrator.interface.excerpts import (
    REASON_CHARS,
    RESULT_CHARS,
    journal_args,
    short,
    summary,
    validation_message,
)
from orchestrator.interface.policy import Decision, decide, screen
from orchestrator.interface.tools import TOOLS, Tool

Json = dict[str, Any]
Verdict = Literal["allowed", "denied", "forbidden"]
Recorder = Callable[[Record], object]
CALL_DEADLINE_S = 10.0  # far below an invocation's budget (110 s): one stuck call cannot use it up
MAX_STRAGGLERS = 8  # handlers still running past their deadline; while this many run, new calls are refused
REQUEST_LIMIT = 1000  # requests of any kind per invocation; far above the read and mutation limits
def _error(kind: str, message: str) -> Json:
    return {"ok": False, "error": {"type": kind, "message": message}}


def _execute(tool: Tool, backend: Backend, parsed: a.Args) -> tuple[Json, list[str]]:
    """Run the handler: its result or its failure as an error result, and the services a mutation acted on."""
    targets: list[str] = []
    try:
        value = tool.handler(backend, parsed)
        if tool.effect == "mutate":
            value, targets = value
        outcome: Json = {"ok": True, "result": value}
    except OrchestratorError as exc:
        outcome = _error(type(exc).__name__, str(exc))
    except Exception as exc:  # the edge: an unexpected failure is still an answer, never a dropped call
        outcome = _error("internal_error", f"{type(exc).__name__}: {exc}")
    if tool.effect == "mutate" and not targets and isinstance(parsed, a.ServiceMutation):
        targets = [parsed.service]
    return outcome, targets


@dataclass(eq=False)
class _Job:
    """One handler run in its own thread; ``lock`` orders its finish against the caller giving up on it."""

    tool: Tool
    parsed: a.Args
    invocation: int
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    outcome: Json | None = None
    targets: list[str] = field(default_factory=list)
    late: bool = False  # the caller stopped waiting at the deadline
    settled: bool = False  # whoever set this journals (or has journaled) what the handler did


class ToolCaller:
    """Runs tool calls for one invocation at a time; thread-safe."""

    def __init__(
        self,
        backend: Backend,
        recorder: Recorder,
        *,
        deadline_s: float = CALL_DEADLINE_S,
        tools: Mapping[str, Tool] = TOOLS,
        request_limit: int = REQUEST_LIMIT,
    ) -> None:
        self.backend = backend
        self.recorder = recorder
        self.deadline_s = deadline_s
        self.tools = tools
        self.request_limit = request_limit
        self.invocation = -1
        self.open = False  # whether invocation ``invocation`` is still open
        self.mutations = 0
        self.reads = 0
        self.requests = 0
        self._unrecorded = 0  # requests past the limit, not journaled yet
        self._state = threading.Lock()  # the invocation, its counters and the stragglers; held briefly
        self._turn = threading.Lock()  # one call at a time, each until its deadline at most
        self._stragglers: dict[_Job, None] = {}  # handlers past their deadline, oldest first
        self._closed = False

    def begin(self, invocation: int) -> None:
        """Start invocation ``invocation`` with fresh request, read and mutation counts (never waits)."""
        self._record_unrecorded()
        with self._state:
            self.invocation = invocation
            self.open = True
            self.mutations = 0
            self.reads = 0
            self.requests = 0

    def end(self) -> None:
        """End the open invocation: its calls still waiting for their turn are refused when it comes."""
        with self._state:
            self.open = False
        self._record_unrecorded()

    def call(self, name: str, raw: Any, *, invocation: int | None = None) -> Json:
        """Run tool ``name`` with the raw JSON arguments ``raw``; ``{"ok": ..., "result"|"error": ...}``.

        ``invocation`` is the invocation whose token the request carried: the call is refused unless that
        invocation is still open when the call's turn comes. Without it, the call is the open invocation's.
        """
        arrived = time.monotonic()
        if not self._admitted(invocation):
            return _error("rate_limited", f"more than {self.request_limit} requests in one invocation")
        tool = self.tools.get(name)
        if tool is None:
            message = f"no tool {short(name)!r}; tools: {', '.join(self.tools)}"
            return self._reject(name, "unknown_tool", message, raw=raw, invocation=invocation)
        if self._closed:
            message = "the tool server is stopping"
            return self._reject(name, "unavailable", message, raw=raw, invocation=invocation)
        bound = invocation is not None
        invocation = self._current() if invocation is None else invocation
        if not self._turn.acquire(timeout=self.deadline_s):
            message = f"no turn within the {self.deadline_s:g} s deadline: earlier calls are still running"
            return self._refuse(tool, invocation, raw, "deadline_exceeded", message)
        try:
            with self._state:
                ended = bound and (not self.open or invocation != self.invocation)
            if ended:
                message = f"invocation {invocation} has ended; the call was not run"
                return self._refuse(tool, invocation, raw, "invocation_ended", message)
            return self._call(tool, raw, invocation, deadline=arrived + self.deadline_s)
        finally:
            self._turn.release()

    def reject(
        self, name: str | None, kind: str, message: str, *, raw: Any = None, invocation: int | None = None
    ) -> Json:
        """Journal a request refused before any tool ran (an unknown tool, a body too large, too deep or not
        JSON) as a denied ``ToolCall`` of ``invocation`` (the open one unless given); returns its error."""
        if not self._admitted(invocation):
            return _error("rate_limited", f"more than {self.request_limit} requests in one invocation")
        return self._reject(name, kind, message, raw=raw, invocation=invocation)

    def close(self) -> None:
        """Take no more calls; journal each mutation still running past its deadline, its outcome unknown."""
        self._record_unrecorded()
        with self._state:
            self._closed = True
            pending = list(self._stragglers)
        for job in pending:
            with job.lock:
                owed = not job.settled
                job.settled = True
            if owed and job.tool.effect == "mutate":
                note = "unfinished when the tool server stopped: whether it took effect is unknown"
                self._intervention(job, result="error", detail=f"{note} (invocation {job.invocation})")

    def _reject(
        self, name: str | None, kind: str, message: str, *, raw: Any = None, invocation: int | None = None
    ) -> Json:
        tool = self.tools.get(name) if name is not None else None
        self.recorder(
            ToolCall(
                invocation=self._current() if invocation is None else invocation,
                t=self.backend.now_s(),
                tool=short(name or ""),
                args=journal_args(raw),
                effect=tool.effect if tool is not None else "none",
                decision="denied",
                reason=short(f"{kind}: {message}", REASON_CHARS),
            )
        )
        return _error(kind, message)

    def _current(self) -> int:
        with self._state:
            return self.invocation

    def _admitted(self, invocation: int | None) -> bool:
        """Count a request against the open invocation's limit; False (counted only) once past it."""
        with self._state:
            if invocation is not None and invocation != self.invocation:
                return True  # a request of an ended invocation is refused anyway, and there are few
            self.requests += 1
            if self.requests <= self.request_limit:
                return True
            self._unrecorded += 1
            return False

    def _record_unrecorded(self) -> None:
        with self._state:
            count, self._unrecorded = self._unrecorded, 0
            invocation = self.invocation
        if count:
            reason = (
                f"rate_limited: {count} more requests past the limit of {self.request_limit} per invocation, "
                "each refused and journaled only in this count"
            )
            self.recorder(
                ToolCall(
                    invocation=invocation,
                    t=self.backend.now_s(),
                    tool="",
                    effect="none",
                    decision="denied",
                    reason=reason,
                )
            )

    def _call(self, tool: Tool, raw: Any, invocation: int, *, deadline: float) -> Json:
        t = self.backend.now_s()
        kept = journal_args(raw)
        # A request that reaches for what is hidden is forbidden whether or not its arguments are valid.
        verdict = screen(raw, model=tool.args, ctx=self.backend.policy_context(mutations_done=0))
        if verdict is not None:
            return self._refused(tool, invocation, t, kept, verdict)
        try:
            parsed = tool.args.model_validate(raw if raw is not None else {})
        except ValidationError as exc:
            message = validation_message(exc)
            self._tool_call(tool, invocation, t, kept, "denied", message, "")
            return _error("invalid_arguments", message)
        with self._state:
            context = self.backend.policy_context(mutations_done=self.mutations, reads_done=self.reads)
            verdict = decide(parsed, context)
            busy = verdict.allowed and len(self._stragglers) >= MAX_STRAGGLERS
            if verdict.allowed and not busy and tool.effect == "mutate":
                self.mutations += 1
            elif verdict.allowed and not busy and tool.effect == "read":
                self.reads += 1
        if busy:
            message = f"{len(self._stragglers)} earlier calls are still running past their deadline"
            return self._refuse(tool, invocation, raw, "unavailable", message)
        if not verdict.allowed:
            return self._refused(tool, invocation, t, kept, verdict)
        job = _Job(tool=tool, parsed=parsed, invocation=invocation)
        threading.Thread(target=self._run, args=(job,), name=f"tool {tool.name}", daemon=True).start()
        if not job.done.wait(max(0.0, deadline - time.monotonic())) and self._give_up(job):
            message = f"{tool.name} gave no answer within the {self.deadline_s:g} s deadline"
            if tool.effect == "mutate":
                message += "; the change may still take effect: check before repeating it"
            self._tool_call(tool, invocation, t, kept, "allowed", f"deadline_exceeded: {message}", "")
            return _error("deadline_exceeded", message)
        assert job.outcome is not None  # set before done, or before _give_up found it finished
        outcome = job.outcome
        self._effects(job)
        reason = "" if outcome["ok"] else short(outcome["error"]["message"], REASON_CHARS)
        result = summary(outcome.get("result", outcome))
        self._tool_call(tool, invocation, t, kept, "allowed", reason, result)
        return outcome

    def _refused(
        self, tool: Tool, invocation: int, t: float, args: dict[str, JsonValue], verdict: Decision
    ) -> Json:
        """A call the policy denied or forbade: its tool call, and for a forbidden one the attempt."""
        self._tool_call(tool, invocation, t, args, verdict.decision, verdict.reason, "")
        if verdict.decision == "forbidden":
            attempt = ForbiddenAttempt(t=t, tool=tool.name, args=args, reason=verdict.reason, blocked=True)
            self.recorder(attempt)
        return _error(verdict.decision, verdict.reason)

    def _give_up(self, job: _Job) -> bool:
        """Stop waiting for ``job``; False when it finished in the meantime after all."""
        with job.lock:
            if job.outcome is not None:
                return False
            job.late = True
            with self._state:
                self._stragglers[job] = None
            return True

    def _run(self, job: _Job) -> None:
        outcome = _error("internal_error", "the handler ended without an answer")
        targets: list[str] = []
        try:
            outcome, targets = _execute(job.tool, self.backend, job.parsed)
        finally:
            with job.lock:
                job.outcome, job.targets = outcome, targets
                owed = job.late and not job.settled
                job.settled = True
                job.done.set()
            if job.late:
                with self._state:
                    self._stragglers.pop(job, None)
            if owed and job.tool.effect == "mutate":
                detail = summary(outcome["result"]) if outcome["ok"] else outcome["error"]["message"]
                note = f"finished after its {self.deadline_s:g} s deadline (invocation {job.invocation}): "
                self._intervention(job, result="ok" if outcome["ok"] else "error", detail=note + detail)

    def _effects(self, job: _Job) -> None:
        """The journal records of what a handler that answered in time did."""
        outcome, parsed = job.outcome, job.parsed
        assert outcome is not None
        if job.tool.effect == "mutate":
            detail = summary(outcome["result"]) if outcome["ok"] else outcome["error"]["message"]
            self._intervention(job, result="ok" if outcome["ok"] else "error", detail=detail)
        elif job.tool.effect == "report" and outcome["ok"] and isinstance(parsed, a.IncidentReportArgs):
            self.recorder(
                IncidentReport(
                    t=self.backend.now_s(),
                    incident_id=parsed.incident_id,
                    alert_ids=parsed.alert_ids,
                    culprits=parsed.culprit_services,
                    artifact=parsed.artifact,
                    status=parsed.status,
                    notes=parsed.notes,
                )
            )

    def _intervention(self, job: _Job, *, result: Literal["ok", "error"], detail: str) -> None:
        self.recorder(
            Intervention(
                t=self.backend.now_s(),
                tool=job.tool.name,
                targets=job.targets,
                incident_id=getattr(job.parsed, "incident_id", None),
                result=result,
                detail=detail[:RESULT_CHARS],
            )
        )

    def _refuse(self, tool: Tool, invocation: int, raw: Any, kind: str, message: str) -> Json:
        """A call refused before its handler ran, journaled as denied with the error type in the reason."""
        reason = short(f"{kind}: {message}", REASON_CHARS)
        self._tool_call(tool, invocation, self.backend.now_s(), journal_args(raw), "denied", reason, "")
        return _error(kind, message)

    def _tool_call(
        self,
        tool: Tool,
        invocation: int,
        t: float,
        args: dict[str, JsonValue],
        decision: Verdict,
        reason: str,
        result: str,
    ) -> None:
        self.recorder(
            ToolCall(
                invocation=invocation,
                t=t,
                tool=tool.name,
                args=args,
                effect=tool.effect,
                decision=decision,
                reason=reason,
                result=result,
            )
        )
