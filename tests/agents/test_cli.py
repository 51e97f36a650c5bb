"""The CLI adapter: a scripted CLI started fresh at every invocation of a whole marathon, inside the
sandbox, reaches the tools through the MCP configuration it is given and the model through the metering
proxy; the bundle's model calls and tokens are exactly what the scripted model served."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from orchestrator.agents.cli import expand, mcp_config, prepare
from orchestrator.agents.inputs import AgentEnv
from orchestrator.bundle.reader import read_bundle
from orchestrator.run.config import make_config
from orchestrator.run.runner import run_marathon
from tests.agents.fakeopenai import UPSTREAM_KEY, Turn, fake_openai

SCRIPTED_CLI = Path(__file__).with_name("scripted_cli.py")
NS = "online-boutique"


def _env(tmp_path: Path, deadline: float | None = 1000.0) -> AgentEnv:
    (tmp_path / "alerts.json").write_text(json.dumps([
        {"alert_id": "a1", "rule": "KubePodCrashLooping", "starts_at": 130.0,
         "labels": {"namespace": NS, "service": "cartservice"}},
    ]))  # fmt: skip
    return AgentEnv(invocation=3, deadline=deadline, alerts_path=str(tmp_path / "alerts.json"), app=NS,
                    namespace=NS, workspace=tmp_path)  # fmt: skip


def test_placeholders_are_replaced_and_other_braces_are_left_alone() -> None:
    values = {"prompt": "P", "prompt_file": "/w/p.md", "mcp_config": "/w/m.json", "mcp_url": "http://u",
              "mcp_token": "t", "openai_base_url": "http://m/v1", "workspace": "/w"}  # fmt: skip
    command = ["cli", "--mcp-config={mcp_config}", "-p", "{prompt}", "--base={openai_base_url}", "{other}"]
    expanded = ["cli", "--mcp-config=/w/m.json", "-p", "P", "--base=http://m/v1", "{other}"]
    assert expand(command, values) == expanded


def test_an_invocation_is_prepared_with_the_mcp_configuration_the_prompt_and_a_home_in_the_workspace(
    tmp_path: Path,
) -> None:
    environ = {"MARATHON_MCP_URL": "http://127.0.0.1:9/mcp", "MARATHON_TOKEN": "tok", "OPENAI_API_KEY": "mk"}
    prepared = prepare(_env(tmp_path), ["cli", "--mcp", "{mcp_config}"], environ, margin_s=5.0, now=900.0)
    config = json.loads((tmp_path / ".marathon" / "mcp.json").read_text())
    assert config == mcp_config("http://127.0.0.1:9/mcp", "tok")
    assert config["mcpServers"]["marathon"]["headers"] == {"Authorization": "Bearer tok"}
    assert prepared.argv == ["cli", "--mcp", str(tmp_path / ".marathon" / "mcp.json")]
    assert prepared.stdin is not None and "invocation 3" in prepared.stdin and "a1" in prepared.stdin
    assert prepared.stdin == (tmp_path / ".marathon" / "prompt.md").read_text()
    assert prepared.env["HOME"] == str(tmp_path / ".home") and prepared.env["OPENAI_API_KEY"] == "mk"
    assert prepared.timeout_s == 95.0
    with_prompt = prepare(_env(tmp_path), ["cli", "-p", "{prompt}"], environ, margin_s=5.0, now=900.0)
    assert with_prompt.stdin is None and "cartservice" in with_prompt.argv[2]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
def test_a_scripted_cli_runs_every_invocation_and_the_bundle_meters_what_the_model_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        Turn(tool_calls=(("get_topology", {}),), prompt_tokens=1200, completion_tokens=30),
        Turn(tool_calls=(("incident_report", {"incident_id": "cli-1", "alert_ids": [],
                                              "culprit_services": ["cartservice"], "artifact": "pod"}),),
             prompt_tokens=1500, completion_tokens=45),
        Turn(content="Filed cli-1.", prompt_tokens=1600, completion_tokens=7),
    ]  # fmt: skip
    monkeypatch.setenv("MARATHON_UPSTREAM_KEY", UPSTREAM_KEY)
    cli = f"{sys.executable} {SCRIPTED_CLI} --mcp-config {{mcp_config}} --prompt-file {{prompt_file}}"
    with fake_openai(script) as (upstream, fake):
        config = make_config(
            app=NS, seed=4, faults=2, delta_s=60, budget_s=40.0, injection_period_s=240,
            observation_period_s=120, min_duration_s=120, max_duration_s=180, quiet=True, baseline=False,
            agent_cmd=f"{sys.executable} -m orchestrator.agents.cli -- {cli}", model_url=upstream,
            runs_root=tmp_path / "runs", out=tmp_path / "run",
        )  # fmt: skip
        result = run_marathon(config)
    assert result.reason == "completed"
    bundle = read_bundle(result.bundle_dir)
    invocations = len(bundle.invocations)
    assert invocations >= 5 and all(i.exit_code == 0 for i in bundle.invocations)
    served = [(turn.prompt_tokens, turn.completion_tokens) for turn in fake.served]
    assert len(served) == 3 + (invocations - 1)  # the first invocation used three turns, the others one
    assert [(call.tokens_in, call.tokens_out) for call in bundle.model_calls] == served
    assert all(call.model == "fake-model-1" for call in bundle.model_calls)
    assert [request["model"] for request in fake.requests] == ["scripted-cli-model"] * len(served)
    assert [(c.invocation, c.tool, c.decision) for c in bundle.tool_calls] == [
        (1, "get_topology", "allowed"), (1, "incident_report", "allowed")
    ]  # fmt: skip
    assert [(r.incident_id, r.culprits, r.artifact) for r in bundle.incident_reports] == [
        ("cli-1", ["cartservice"], "pod")
    ]  # fmt: skip
    transcript = [json.loads(line) for line in (result.run_dir / "workspace" / "transcript.jsonl").open()]
    assert len(transcript) == invocations  # a fresh CLI each time, one persistent workspace
    assert transcript[0]["called"] == ["get_topology:True", "incident_report:True"]
    assert all(line["called"] == [] for line in transcript[1:])
    assert all(line["home"].endswith("/.home") for line in transcript)
    first_prompt = fake.requests[0]["messages"][0]["content"]
    assert "invocation 1 of a long run" in first_prompt and f"namespace {NS}" in first_prompt
