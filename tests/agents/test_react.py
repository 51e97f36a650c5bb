"""The ReAct agent, through the metering proxy and an MCP tools server, does what its model script says."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agents import AGENTS
from orchestrator.agents.chat import Completion, ModelRefused
from orchestrator.agents.options import OPTIONS_ENV, encode_options
from orchestrator.agents.react import Limits, LoopResult, react_loop
from orchestrator.bundle.records import ModelCall
from orchestrator.run.metering import MeteringProxy
from tests.agents.fakeopenai import UPSTREAM_KEY, Script, Turn, fake_openai
from tests.agents.toolserver import ToolLog, tools_server

TOKEN = "invocation-token"
ALERTS = [
    {"alert_id": "a1", "rule": "ServiceHighErrorRatio", "starts_at": 130.0,
     "labels": {"namespace": "online-boutique", "service": "cartservice"}},
]  # fmt: skip
SCRIPT = [
    Turn(tool_calls=(("get_alerts", {"status": "firing"}),), prompt_tokens=900, completion_tokens=20),
    Turn(
        tool_calls=(
            ("incident_report", {"incident_id": "cart-1", "alert_ids": ["a1"],
                                 "culprit_services": ["cartservice"], "artifact": "config"}),
            ("restart_service", {"incident_id": "cart-1", "service": "cartservice"}),
        ),
        prompt_tokens=1400, completion_tokens=60,
    ),
    Turn(content="Restarted cartservice; watching.", prompt_tokens=1600, completion_tokens=12),
]  # fmt: skip


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[dict[str, str], Script, ToolLog, list[ModelCall], MeteringProxy]]:
    records: list[ModelCall] = []
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "alerts.json").write_text(json.dumps(ALERTS))
    with fake_openai(SCRIPT) as (upstream, script), tools_server(TOKEN) as (mcp_url, log):
        proxy = MeteringProxy(upstream, UPSTREAM_KEY, records.append, lambda: 240.0)
        base = proxy.start()
        try:
            key = proxy.open_invocation(2, 50_000)
            env = {
                **os.environ, "MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": TOKEN,
                "MARATHON_INVOCATION": "2",
                "MARATHON_ALERTS": str(tmp_path / "inbox" / "alerts.json"), "MARATHON_APP": "online-boutique",
                "MARATHON_NAMESPACE": "online-boutique", "OPENAI_BASE_URL": base, "OPENAI_API_KEY": key,
                "MARATHON_DEADLINE": "9999999999", "PYTHONPATH": os.getcwd(),
            }  # fmt: skip
            yield env, script, log, records, proxy
        finally:
            proxy.stop()


@pytest.mark.slow
def test_the_react_agent_completes_an_invocation_calling_the_tools_its_model_asked_for(
    world: Any, tmp_path: Path
) -> None:
    env, script, log, records, _ = world
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [name for name, _ in log.calls] == ["get_alerts", "incident_report", "restart_service"]
    assert log.calls[2][1] == {"incident_id": "cart-1", "service": "cartservice"}
    assert [(r.tokens_in, r.tokens_out) for r in records] == [(900, 20), (1400, 60), (1600, 12)]
    assert all(r.model == "fake-model-1" and r.t == 240.0 for r in records)
    first = script.requests[0]
    assert first["model"] == "gpt-4o-mini"
    assert {tool["function"]["name"] for tool in first["tools"]} >= {"get_alerts", "incident_report"}
    assert "a1" in first["messages"][1]["content"] and "cartservice" in first["messages"][1]["content"]
    last = script.requests[2]["messages"]
    assert [m["role"] for m in last[-2:]] == ["tool", "tool"]
    memory = json.loads((tmp_path / "react-memory.json").read_text())
    assert memory["incidents"]["cart-1"]["alert_ids"] == ["a1"]
    assert memory["actions"] == [{"tool": "restart_service",
                                  "args": {"incident_id": "cart-1", "service": "cartservice"}}]  # fmt: skip


@pytest.mark.slow
def test_the_react_agent_stops_when_the_proxy_refuses_its_token_budget(world: Any, tmp_path: Path) -> None:
    env, script, log, records, proxy = world
    env["OPENAI_API_KEY"] = proxy.open_invocation(3, 500)  # the first turn alone spends 920 tokens
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "model refused" in done.stderr
    assert len(script.requests) == 1 and len(records) == 1
    assert [name for name, _ in log.calls] == ["get_alerts"]


@pytest.mark.slow
def test_the_react_agent_asks_for_the_model_and_temperature_its_options_name(
    world: Any, tmp_path: Path
) -> None:
    env, script, _, _, _ = world
    env[OPTIONS_ENV] = encode_options({"model": "fake-model-9", "temperature": 0.6})
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(script.requests) == 3
    assert [(r["model"], r["temperature"]) for r in script.requests] == [("fake-model-9", 0.6)] * 3


@pytest.mark.slow
def test_the_react_agent_sends_no_temperature_when_its_options_say_none(world: Any, tmp_path: Path) -> None:
    env, script, _, _, _ = world
    env[OPTIONS_ENV] = encode_options({"temperature": "none"})
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert script.requests and all("temperature" not in r for r in script.requests)
    assert script.requests[0]["model"] == "gpt-4o-mini"


@pytest.mark.slow
def test_the_react_agent_stops_at_the_step_limit_its_options_set(world: Any, tmp_path: Path) -> None:
    env, script, log, _, _ = world
    env[OPTIONS_ENV] = encode_options({"max_steps": 1})
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "step limit" in done.stderr
    assert len(script.requests) == 1
    assert [name for name, _ in log.calls] == ["get_alerts"]


@pytest.mark.slow
def test_an_option_the_react_agent_does_not_accept_ends_the_invocation_with_one_line(
    world: Any, tmp_path: Path
) -> None:
    env, script, _, _, _ = world
    env[OPTIONS_ENV] = encode_options({"modle": "fake-model-9"})
    done = subprocess.run(AGENTS["react"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "modle = 'fake-model-9': not an option of the react agent" in lines[0]
    assert script.requests == []


def _complete_with(turns: list[Completion]) -> Any:
    def complete(messages: list[dict[str, Any]], left: float) -> Completion:
        return turns.pop(0)

    return complete


def _call(name: str) -> Completion:
    calls = [{"id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}}]
    return Completion(message={"role": "assistant", "tool_calls": calls}, tokens_in=10, tokens_out=5)


def _loop(turns: list[Completion], *, limits: Limits, remaining: list[float]) -> LoopResult:
    return react_loop(
        complete=_complete_with(turns),
        call_tool=lambda name, args: {"ok": True, "result": name},
        messages=[],
        limits=limits,
        remaining_s=lambda: remaining.pop(0) if len(remaining) > 1 else remaining[0],
    )


def test_the_loop_stops_at_its_step_limit() -> None:
    result = _loop([_call("get_topology")] * 10, limits=Limits(max_steps=3), remaining=[1e9])
    assert (result.steps, result.stop_reason, len(result.calls)) == (3, "step limit", 3)


def test_the_loop_stops_at_its_token_limit() -> None:
    result = _loop([_call("get_topology")] * 10, limits=Limits(max_tokens=40), remaining=[1e9])
    assert (result.steps, result.stop_reason) == (3, "token limit")


def test_the_loop_stops_before_the_deadline() -> None:
    result = _loop([_call("get_topology")] * 10, limits=Limits(margin_s=8.0), remaining=[60.0, 30.0, 8.5])
    assert (result.steps, result.stop_reason) == (2, "deadline")


def test_the_loop_answers_bad_tool_arguments_without_calling_the_tool() -> None:
    bad = Completion(message={"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "get_logs", "arguments": "{not json"}}]},
        tokens_in=1, tokens_out=1)  # fmt: skip
    answer = Completion(message={"role": "assistant", "content": "done"}, tokens_in=1, tokens_out=1)
    messages: list[dict[str, Any]] = []
    called: list[str] = []
    result = react_loop(
        complete=_complete_with([bad, answer]),
        call_tool=lambda name, args: called.append(name) or {"ok": True},
        messages=messages, limits=Limits(), remaining_s=lambda: 1e9,
    )  # fmt: skip
    assert called == [] and result.stop_reason == "answered" and result.answer == "done"
    assert json.loads(messages[1]["content"])["error"]["type"] == "BadArguments"


def test_a_refusal_by_the_model_endpoint_ends_the_loop() -> None:
    def refuse(messages: list[dict[str, Any]], left: float) -> Completion:
        raise ModelRefused("429")

    result = react_loop(complete=refuse, call_tool=lambda n, a: {}, messages=[], limits=Limits(),
                        remaining_s=lambda: 1e9)  # fmt: skip
    assert result.steps == 0 and result.stop_reason.startswith("model refused")
