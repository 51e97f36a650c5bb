"""One tool call end to end: validate, decide, execute, journal; every failure a structured error result.

The journal gets, per call: a ``ToolCall`` with the decision and its reason (always); a
``ForbiddenAttempt(blocked=True)`` when the policy forbade it; an ``Intervention`` when a mutation was
executed (result ok or error); an ``IncidentReport`` for an accepted ``incident_report``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import JsonValue, ValidationError

from orchestrator.bundle.records import ForbiddenAttempt, IncidentReport, Intervention, Record, ToolCall
from orchestrator.errors import OrchestratorError
from orchestrator.interface import args as a
from orchestrator.interface.backend import Backend
from orchestrator.interface.policy import decide
from orchestrator.interface.tools import TOOLS, Tool

Json = dict[str, Any]
Verdict = Literal["allowed", "denied", "forbidden"]
Recorder = Callable[[Record], object]
RESULT_CHARS = 500  # the journal keeps a short summary of each result, not the whole answer
ARG_CHARS = 4000


class UnknownTool(OrchestratorError):
    """No tool has this name."""


def _summary(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + f"... [{len(text)} characters]"


def _journal_args(raw: Any) -> dict[str, JsonValue]:
    """The arguments as the journal keeps them: JSON values, long strings (diffs) cut with a note."""
    if not isinstance(raw, dict):
        return {"_invalid": str(raw)[:ARG_CHARS]}
    kept: dict[str, JsonValue] = {}
    for key, value in raw.items():
        text = json.dumps(value, default=str)
        if len(text) > ARG_CHARS:
            kept[str(key)] = text[:ARG_CHARS] + f"... [{len(text)} characters]"
        else:
            kept[str(key)] = json.loads(text)
    return kept


def _error(kind: str, message: str) -> Json:
    return {"ok": False, "error": {"type": kind, "message": message}}


def _validation_message(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()]
    return "invalid arguments: " + "; ".join(parts)


class ToolCaller:
    """Runs tool calls for one invocation at a time; thread-safe (calls are serialised)."""

    def __init__(self, backend: Backend, recorder: Recorder) -> None:
        self.backend = backend
        self.recorder = recorder
        self.invocation = -1
        self.mutations = 0
        self._lock = threading.Lock()

    def begin(self, invocation: int) -> None:
        with self._lock:
            self.invocation = invocation
            self.mutations = 0

    def tool(self, name: str) -> Tool:
        if name not in TOOLS:
            raise UnknownTool(f"no tool {name!r}; tools: {', '.join(TOOLS)}")
        return TOOLS[name]

    def call(self, name: str, raw: Any) -> Json:
        """Run tool ``name`` with the raw JSON arguments ``raw``; ``{"ok": ..., "result"|"error": ...}``."""
        tool = self.tool(name)
        with self._lock:
            return self._call(tool, raw)

    def _call(self, tool: Tool, raw: Any) -> Json:
        t = self.backend.now_s()
        journal_args = _journal_args(raw if raw is not None else {})
        try:
            parsed = tool.args.model_validate(raw if raw is not None else {})
        except ValidationError as exc:
            message = _validation_message(exc)
            self._tool_call(tool, t, journal_args, "denied", message, "")
            return _error("invalid_arguments", message)
        verdict = decide(parsed, self.backend.policy_context(mutations_done=self.mutations))
        if not verdict.allowed:
            self._tool_call(tool, t, journal_args, verdict.decision, verdict.reason, "")
            if verdict.decision == "forbidden":
                self.recorder(
                    ForbiddenAttempt(
                        t=t, tool=tool.name, args=journal_args, reason=verdict.reason, blocked=True
                    )
                )
            return _error(verdict.decision, verdict.reason)
        outcome = self._execute(tool, parsed)
        reason = "" if outcome["ok"] else outcome["error"]["message"]
        self._tool_call(tool, t, journal_args, "allowed", reason, _summary(outcome.get("result", outcome)))
        return outcome

    def _execute(self, tool: Tool, parsed: a.Args) -> Json:
        targets: list[str] = []
        try:
            value = tool.handler(self.backend, parsed)
            if tool.effect == "mutate":
                value, targets = value
            outcome: Json = {"ok": True, "result": value}
        except OrchestratorError as exc:
            outcome = _error(type(exc).__name__, str(exc))
        except Exception as exc:  # the edge: an unexpected failure is still an answer, never a dropped call
            outcome = _error("internal_error", f"{type(exc).__name__}: {exc}")
        if tool.effect == "mutate":
            self.mutations += 1
            if not targets and hasattr(parsed, "service"):
                targets = [parsed.service]
            detail = _summary(outcome["result"]) if outcome["ok"] else outcome["error"]["message"]
            self.recorder(
                Intervention(
                    t=self.backend.now_s(),
                    tool=tool.name,
                    targets=targets,
                    incident_id=getattr(parsed, "incident_id", None),
                    result="ok" if outcome["ok"] else "error",
                    detail=detail[:RESULT_CHARS],
                )
            )
        elif tool.effect == "report" and outcome["ok"] and isinstance(parsed, a.IncidentReportArgs):
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
        return outcome

    def _tool_call(
        self, tool: Tool, t: float, args: dict[str, JsonValue], decision: Verdict, reason: str, result: str
    ) -> None:
        self.recorder(
            ToolCall(
                invocation=self.invocation,
                t=t,
                tool=tool.name,
                args=args,
                effect=tool.effect,
                decision=decision,
                reason=reason,
                result=result,
            )
        )
