"""Each agent runs as its own command under the agent protocol, and the MCP client speaks to a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agents import AGENTS
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.errors import AgentError
from tests.agents.toolserver import tools_server

TOKEN = "invocation-token"
NS = "online-boutique"


def _env(mcp_url: str, workspace: Path, alerts: list[dict[str, Any]], **extra: str) -> dict[str, str]:
    path = workspace / "alerts.json"
    path.write_text(json.dumps(alerts))
    return {
        **os.environ, "MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": TOKEN, "MARATHON_INVOCATION": "1",
        "MARATHON_ALERTS": str(path), "MARATHON_APP": NS, "MARATHON_NAMESPACE": NS,
        "MARATHON_DEADLINE": "9999999999", "PYTHONPATH": os.getcwd(), **extra,
    }  # fmt: skip


def test_every_agent_name_maps_to_a_module_command_under_this_interpreter() -> None:
    assert set(AGENTS) == {"noop", "runbook", "correlation", "oracle", "react", "rag", "cli"}
    for name, command in AGENTS.items():
        assert command == [sys.executable, "-m", f"orchestrator.agents.{name}"]


def test_the_client_lists_tools_and_returns_results_and_refusals_as_envelopes() -> None:
    alerts = [{"id": "a1", "status": "firing"}, {"id": "a2", "status": "resolved"}]
    with tools_server(TOKEN, alerts) as (url, log), ToolClient(url, TOKEN) as client:
        assert {"get_alerts", "incident_report", "restart_service"} <= {t.name for t in client.list_tools()}
        spec = next(t for t in client.list_tools() if t.name == "scale_service")
        assert spec.input_schema["properties"]["replicas"]["type"] == "integer"
        assert client.call("get_alerts", status="firing") == {"ok": True, "result": [alerts[0]]}
        refused = client.call("restart_service", incident_id="i", service="forbidden")
        assert refused == {"ok": False, "error": {"type": "PolicyDenied", "message": "not a workload"}}
        unknown = client.call("no_such_tool")
        assert unknown["ok"] is False and "no_such_tool" in unknown["error"]["message"]
        assert log.calls[0] == ("get_alerts", {"status": "firing"})


def test_the_client_refuses_to_start_without_a_valid_token() -> None:
    with tools_server(TOKEN) as (url, _), pytest.raises(AgentError, match="cannot open an MCP session"):
        ToolClient(url, "wrong").open()
    with pytest.raises(AgentError, match="MARATHON_TOKEN"):
        ToolClient.from_env({"MARATHON_MCP_URL": "http://127.0.0.1:1/mcp"})


@pytest.mark.slow
def test_the_noop_agent_exits_cleanly_and_calls_nothing(tmp_path: Path) -> None:
    with tools_server(TOKEN) as (url, log):
        done = subprocess.run(AGENTS["noop"], env=_env(url, tmp_path, []), cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert log.calls == []


@pytest.mark.slow
def test_the_runbook_agent_reports_acts_once_and_resolves_on_the_next_invocation(tmp_path: Path) -> None:
    alerts = [{"alert_id": "a1", "rule": "KubeDeploymentNoAvailableReplicas", "starts_at": 130.0,
               "labels": {"namespace": NS, "deployment": "checkoutservice",
                          "signal": "replicas"}}]  # fmt: skip
    with tools_server(TOKEN) as (url, log):
        env = _env(url, tmp_path, alerts)
        for _ in range(2):
            done = subprocess.run(AGENTS["runbook"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
            assert done.returncode == 0, done.stderr
    assert [name for name, _ in log.calls] == ["incident_report", "get_resources", "scale_service",
                                               "incident_report"]  # fmt: skip
    assert log.calls[0][1] == {
        "incident_id": "rb-checkoutservice-1", "alert_ids": ["a1"], "culprit_services": ["checkoutservice"],
        "artifact": "replicas", "status": "open",
    }  # fmt: skip
    assert log.calls[2][1]["replicas"] == 2  # one more than the one replica get_resources reported
    assert log.calls[3][1]["status"] == "resolved"


@pytest.mark.slow
def test_the_oracle_agent_reports_the_truth_and_applies_the_remedy(tmp_path: Path) -> None:
    alerts = [{"alert_id": "a1", "rule": "ServiceHighErrorRatio", "starts_at": 130.0,
               "labels": {"namespace": NS, "service": "frontend"}}]  # fmt: skip
    truth = {
        "now_s": 240.0,
        "grace_s": 60.0,
        "faults": [
            {
                "fault_id": "f0",
                "catalog_id": "ob-checkout-release",
                "namespace": NS,
                "target": "checkoutservice",
                "culprits": ["checkoutservice"],
                "artifact": "release:checkoutservice@v0.10.6-1",
                "scope": ["checkoutservice", "frontend"],
                "inject_s": 120.0,
                "remedy": {"action": "rollback"},
            }
        ],
    }
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    with tools_server(TOKEN) as (url, log):
        env = _env(url, tmp_path, alerts, MARATHON_ORACLE_TRUTH=str(tmp_path / "truth.json"))
        for _ in range(2):
            done = subprocess.run(AGENTS["oracle"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
            assert done.returncode == 0, done.stderr
    assert [(name, args.get("status")) for name, args in log.calls] == [
        ("incident_report", "open"), ("rollback_service", None), ("incident_report", "mitigated"),
    ]  # fmt: skip
    assert log.calls[0][1]["artifact"] == "release:checkoutservice@v0.10.6-1"
    assert log.calls[1][1] == {"incident_id": "oracle-f0", "service": "checkoutservice"}


def test_an_agent_without_a_tools_server_exits_1_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from orchestrator.agents import runbook

    monkeypatch.delenv("MARATHON_MCP_URL", raising=False)
    monkeypatch.setenv("MARATHON_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)
    assert runbook.main() == 1
    assert "MARATHON_MCP_URL" in caplog.text
