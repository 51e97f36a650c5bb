"""The ReAct agent: a model reasons and calls the marathon tools in a loop, one conversation per invocation.

Each invocation starts a fresh conversation from the alert history and a short memory of its own earlier
incident reports and actions (kept in the workspace), then alternates model turns and tool calls until the
model answers without calling a tool, or a step, token or deadline limit is reached.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.agents.chat import ChatModel, Completion, ModelRefused, openai_tools
from orchestrator.agents.inputs import (
    AgentEnv,
    AlertView,
    agent_options,
    load_alerts,
    read_state,
    run_main,
    write_state,
)
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.agents.options import OptionValue
from orchestrator.errors import AgentError
from orchestrator.vocabulary.artifacts import ARTIFACT_KIND_LIST

log = logging.getLogger("orchestrator.agents.react")
NAME = "react"
DEFAULT_MODEL = "gpt-4o-mini"
MEMORY_FILE = "react-memory.json"
RESULT_CHARS = 6000
ALERT_LINES = 60

SYSTEM_PROMPT = (
    """You are the on-call SRE of the application {app} (Kubernetes namespace {namespace}).
Faults arrive continuously and overlap. You are invoked periodically with the alert history; use the tools
to investigate (alerts, metrics, logs, traces, topology, resources, events, rollout history, config, source,
feature flags) and to repair.
For every distinct problem, file an incident with incident_report: a stable incident_id of your choice, the
ids of the alerts it explains (never file unrelated alerts together: one incident per root cause), the
culprit services (exactly the services whose change caused it) and the responsible artifact as KIND or
KIND:REFERENCE, KIND one of """
    + ARTIFACT_KIND_LIST
    + """ (e.g. release:cartservice@v1.2.3, config:cartservice/env/REDIS_ADDR,
resources:currencyservice/limits/memory, feature-flag:paymentFailure). Re-report an incident to update it.
Then repair with the smallest safe change (rollback_service, restart_service, scale_service, update_config,
set_feature_flag, or a source patch), naming the incident_id. Never touch other namespaces, never delete
deployments or namespaces, never read secrets. When nothing more is useful, answer briefly without a tool."""
)


@dataclass(frozen=True)
class Limits:
    max_steps: int = 24
    max_tokens: int = 150_000
    margin_s: float = 8.0  # stop this long before the deadline: the runner kills at the budget


@dataclass(frozen=True)
class Settings:
    """What an invocation's options decide: the model asked for, its temperature and the loop's limits."""

    model: str
    temperature: float | None
    limits: Limits


@dataclass
class LoopResult:
    steps: int = 0
    tokens: int = 0
    stop_reason: str = ""
    calls: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)
    answer: str = ""


def alert_lines(alerts: list[AlertView], filed: set[str]) -> list[str]:
    """The alerts as prompt lines, firing first then newest, at most ``ALERT_LINES`` (no side effects)."""
    ordered = sorted(alerts, key=lambda a: (not a.firing, -a.starts_at, a.alert_id))[:ALERT_LINES]
    lines = []
    for alert in ordered:
        labels = ",".join(f"{k}={v}" for k, v in sorted(alert.labels.items()) if k != "alertname")
        state = "firing" if alert.firing else f"resolved@{alert.ends_at:.0f}s"
        mark = " (filed)" if alert.alert_id in filed else ""
        summary = alert.annotations.get("summary", "")
        lines.append(f"- {alert.alert_id}{mark} {alert.rule} [{state}, since {alert.starts_at:.0f}s] "
                     f"{labels} {summary}".rstrip())  # fmt: skip
    return lines


def first_messages(env: AgentEnv, alerts: list[AlertView], memory: dict[str, Any]) -> list[dict[str, Any]]:
    """The opening conversation of an invocation (no side effects)."""
    incidents: dict[str, Any] = memory.get("incidents", {})
    filed = {alert_id for incident in incidents.values() for alert_id in incident.get("alert_ids", [])}
    parts = [f"Invocation {env.invocation}. Times are seconds since the run started."]
    lines = alert_lines(alerts, filed)
    parts.append("Alerts:\n" + ("\n".join(lines) if lines else "(none)"))
    if incidents:
        parts.append("Your incidents so far:\n" + json.dumps(incidents, sort_keys=True))
    actions = memory.get("actions", [])[-20:]
    if actions:
        parts.append("Your recent actions:\n" + json.dumps(actions, sort_keys=True))
    parts.append("Investigate what is new, report incidents and repair.")
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(app=env.app, namespace=env.namespace)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def remember(memory: dict[str, Any], tool: str, args: dict[str, Any], outcome: dict[str, Any]) -> None:
    """Keep what a later invocation must know: reported incidents and mutations with their outcome."""
    if not outcome.get("ok"):
        return
    if tool == "incident_report":
        memory.setdefault("incidents", {})[str(args.get("incident_id"))] = {
            key: args.get(key) for key in ("alert_ids", "culprit_services", "artifact", "status")
        }
    elif "incident_id" in args:
        memory.setdefault("actions", []).append({"tool": tool, "args": args})


def react_loop(
    *,
    complete: Callable[[list[dict[str, Any]], float], Completion],
    call_tool: Callable[[str, dict[str, Any]], dict[str, Any]],
    messages: list[dict[str, Any]],
    limits: Limits,
    remaining_s: Callable[[], float],
) -> LoopResult:
    """Alternate model turns and tool calls until an answer or a limit; ``messages`` grows in place."""
    result = LoopResult()
    while True:
        if result.steps >= limits.max_steps:
            result.stop_reason = "step limit"
            return result
        if result.tokens >= limits.max_tokens:
            result.stop_reason = "token limit"
            return result
        left = remaining_s() - limits.margin_s
        if left <= 1.0:
            result.stop_reason = "deadline"
            return result
        try:
            completion = complete(messages, left)
        except ModelRefused as exc:
            result.stop_reason = f"model refused: {exc}"
            return result
        result.steps += 1
        result.tokens += completion.tokens_in + completion.tokens_out
        message = {k: v for k, v in completion.message.items() if k in ("role", "content", "tool_calls")}
        message["role"] = "assistant"
        messages.append(message)
        tool_calls = completion.message.get("tool_calls") or []
        if not tool_calls:
            result.answer = str(completion.message.get("content") or "")
            result.stop_reason = "answered"
            return result
        for call in tool_calls:
            function = call.get("function") or {}
            name = str(function.get("name", ""))
            try:
                args = json.loads(function.get("arguments") or "{}")
                if not isinstance(args, dict):
                    raise ValueError("arguments must be a JSON object")
            except ValueError as exc:
                error = {"type": "BadArguments", "message": str(exc)}
                outcome: dict[str, Any] = {"ok": False, "error": error}
                args = {}
            else:
                outcome = call_tool(name, args)
            result.calls.append((name, args, bool(outcome.get("ok"))))
            shown = json.dumps(args)[:300]
            log.info("step %d: %s(%s) -> ok=%s", result.steps, name, shown, outcome.get("ok"))
            text = json.dumps(outcome, default=str)
            if len(text) > RESULT_CHARS:
                text = text[:RESULT_CHARS] + f"... [truncated {len(text) - RESULT_CHARS} characters]"
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": text})


def loop_remembering(
    env: AgentEnv,
    client: ToolClient,
    model: ChatModel,
    messages: list[dict[str, Any]],
    memory: dict[str, Any],
    path: Path,
    *,
    limits: Limits,
    wall: Callable[[], float],
) -> LoopResult:
    """The tool loop until the deadline or the limits, writing the agent's memory after every tool call."""
    tools = openai_tools(client.list_tools())
    deadline = env.deadline

    def call_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
        outcome = client.call(name, **args)
        remember(memory, name, args, outcome)
        write_state(path, memory)
        return outcome

    return react_loop(
        complete=lambda msgs, left: model.complete(msgs, tools, timeout_s=min(left, 120.0)),
        call_tool=call_tool,
        messages=messages,
        limits=limits,
        remaining_s=lambda: (deadline - wall()) if deadline is not None else float("inf"),
    )


def run(env: AgentEnv, client: ToolClient, model: ChatModel, *, limits: Limits,
        wall: Callable[[], float]) -> LoopResult:  # fmt: skip
    path = Path(env.workspace) / MEMORY_FILE
    memory = read_state(path)
    messages = first_messages(env, load_alerts(env.alerts_path), memory)
    result = loop_remembering(env, client, model, messages, memory, path, limits=limits, wall=wall)
    log.info("stopped after %d steps, %d tokens: %s", result.steps, result.tokens, result.stop_reason)
    return result


def settings_of(options: Mapping[str, OptionValue]) -> Settings:
    """The model, temperature and limits the options ask for, defaults for the rest (no side effects).

    ``options`` have been read by ``agent_options``, so every value is of its option's kind."""
    limits = Limits()
    # Some reasoning models accept no temperature: temperature=none leaves it out.
    temperature = options.get("temperature", 0.0)
    return Settings(
        model=str(options.get("model", DEFAULT_MODEL)),
        temperature=None if temperature == "none" else float(temperature),
        limits=Limits(
            max_steps=int(options.get("max_steps", limits.max_steps)),
            max_tokens=int(options.get("max_tokens", limits.max_tokens)),
            margin_s=float(options.get("margin_s", limits.margin_s)),
        ),
    )


def main() -> int:
    return run_main(_main)


def model_from_env(settings: Settings, *, agent: str) -> ChatModel:
    """The chat model the metering proxy serves, at the address and with the key the harness set."""
    base_url, api_key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
    if not base_url or not api_key:
        raise AgentError(f"OPENAI_BASE_URL and OPENAI_API_KEY must be set for the {agent}")
    return ChatModel(base_url, api_key, settings.model, temperature=settings.temperature)


def _main() -> int:
    env = AgentEnv.from_env()
    settings = settings_of(agent_options(NAME))
    model = model_from_env(settings, agent="ReAct agent")
    try:
        with ToolClient.from_env() as client:
            # The deadline is wall time by protocol, so the wall clock is the right one to compare it with.
            run(env, client, model, limits=settings.limits, wall=time.time)
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
