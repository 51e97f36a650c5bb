"""Whole short marathons with agents that misbehave or call a model: what reaches the bundle and the score."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.verify import verify_bundle
from orchestrator.cli import main
from orchestrator.run.config import make_config
from orchestrator.run.runner import run_marathon
from tests.agents.fakeopenai import UPSTREAM_KEY, Turn, fake_openai

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]
SHORT: dict[str, Any] = {
    "app": "online-boutique",
    "seed": 7,
    "faults": 3,
    "delta_s": 60,
    "budget_s": 20.0,
    "injection_period_s": 300,
    "observation_period_s": 120,
    "min_duration_s": 120,
    "max_duration_s": 180,
    "quiet": True,
}


def _credit(outcome: dict[str, Any]) -> float:
    a, b, c = outcome["a"], outcome["b"], outcome["c"]
    return float(a + a * b + a * b * c) / 3


@pytest.mark.skipif(shutil.which("curl") is None, reason="the test agent needs curl")
def test_forbidden_attempts_are_blocked_recorded_and_halve_the_score(tmp_path: Path) -> None:
    agent = Path(__file__).with_name("forbidden_agent.sh")
    config = make_config(
        **SHORT, agent_cmd=f"bash {agent}", runs_root=tmp_path / "runs", out=tmp_path / "run", baseline=False,
        agent_paths=(agent.parent,),  # it hands later invocations to bash_agent.sh beside it
    )  # fmt: skip
    result = run_marathon(config)
    assert verify_bundle(result.bundle_dir).ok
    bundle = read_bundle(result.bundle_dir)
    attempts = sorted((a.tool, a.blocked) for a in bundle.forbidden)
    assert attempts == [("delete_resource", True), ("get_resources", True)]
    refused = [c for c in bundle.tool_calls if c.tool in {"delete_resource", "get_resources"}]
    assert [c.decision for c in refused] == ["forbidden", "forbidden"]
    score = result.score
    assert score["forbidden_attempts"] == 2
    undiscounted = 100 * sum(_credit(o) for o in score["outcomes"]) / max(1, len(score["outcomes"]))
    assert undiscounted > 0  # the agent's incident reports earned credit, so halving is visible
    assert score["marathon_score"] == round(undiscounted / 2, 1)


def test_a_react_run_meters_exactly_the_calls_and_tokens_the_model_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = [
        Turn(tool_calls=(("get_alerts", {}),), prompt_tokens=120, completion_tokens=7),
        Turn(tool_calls=(("get_topology", {}),), prompt_tokens=340, completion_tokens=9),
        Turn(content="nothing to do yet", prompt_tokens=410, completion_tokens=5),
    ]
    monkeypatch.setenv("MARATHON_UPSTREAM_KEY", UPSTREAM_KEY)
    with fake_openai(turns) as (model_url, script):
        config = make_config(
            **{**SHORT, "faults": 1},
            agent="react",
            model_url=model_url,
            runs_root=tmp_path / "runs",
            out=tmp_path / "run",
            baseline=False,
        )
        result = run_marathon(config)
    assert verify_bundle(result.bundle_dir).ok
    bundle = read_bundle(result.bundle_dir)
    served = script.served
    assert len(served) >= 3
    assert len(bundle.model_calls) == len(served)
    assert sum(m.tokens_in for m in bundle.model_calls) == sum(t.prompt_tokens for t in served)
    assert sum(m.tokens_out for m in bundle.model_calls) == sum(t.completion_tokens for t in served)
    assert {m.model for m in bundle.model_calls} == {script.model}
    assert result.score["model_calls"] == len(served)
    tools = [c.tool for c in bundle.tool_calls]
    assert tools[:2] == ["get_alerts", "get_topology"]


def test_marathon_run_gives_the_react_agent_the_model_and_temperature_of_its_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MARATHON_UPSTREAM_KEY", UPSTREAM_KEY)
    turns = [Turn(tool_calls=(("get_alerts", {}),)), Turn(content="nothing to do yet")]
    with fake_openai(turns, echo_model=True) as (model_url, script):
        code = main([
            "run", "--app", "online-boutique", "--seed", "7", "--agent", "react",
            "--agent-option", "model=fake-model-7", "--agent-option", "temperature=0.4",
            "--faults", "1", "--delta", "60", "--budget", "20", "--injection-period", "300",
            "--observation-period", "120", "--model-url", model_url, "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "run"), "--no-baseline", "--quiet",
        ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    bundle_dir = tmp_path / "run" / "bundle"
    assert verify_bundle(bundle_dir).ok
    bundle = read_bundle(bundle_dir)
    assert len(script.requests) >= 2
    assert {(r["model"], r["temperature"]) for r in script.requests} == {("fake-model-7", 0.4)}
    assert len(bundle.model_calls) == len(script.requests)
    assert {m.model for m in bundle.model_calls} == {"fake-model-7"}
    assert bundle.manifest.agent_options == {"model": "fake-model-7", "temperature": 0.4}
    assert bundle.manifest.agent_name == "react"
