"""The baseline agents against the real tools server over an Online Boutique twin: journaled, effective."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agents import AGENTS
from orchestrator.bundle.records import IncidentReport, Intervention, ModelCall, ToolCall
from orchestrator.cluster.client import ObjectRef
from orchestrator.interface.server import ToolServer
from orchestrator.run.metering import MeteringProxy
from tests.agents.fakeopenai import UPSTREAM_KEY, Turn, fake_openai
from tests.interface.world import World, running_world

NS = "online-boutique"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, ToolServer, str]]:
    with running_world(NS, directory=tmp_path_factory.mktemp("twin")) as world:
        server = ToolServer(world.backend, world.records.append)
        mcp_url, _ = server.start()
        try:
            yield world, server, mcp_url
        finally:
            server.stop()


def _run(name: str, *, workspace: Path, env: dict[str, str], alerts: list[dict[str, Any]]) -> str:
    (workspace / "alerts.json").write_text(json.dumps(alerts))
    full = {
        **os.environ, "MARATHON_ALERTS": str(workspace / "alerts.json"), "MARATHON_APP": NS,
        "MARATHON_NAMESPACE": NS, "MARATHON_DEADLINE": "9999999999", "PYTHONPATH": os.getcwd(), **env,
    }  # fmt: skip
    done = subprocess.run(AGENTS[name], env=full, cwd=workspace, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_the_runbook_agent_scales_a_deployment_back_up_through_the_real_tools(
    served: tuple[World, ToolServer, str], tmp_path: Path
) -> None:
    world, server, mcp_url = served
    world.kube.scale(ObjectRef("Deployment", NS, "checkoutservice"), 0)
    world.advance(60.0)
    since = len(world.records)
    labels = {"namespace": NS, "deployment": "checkoutservice", "service": "checkoutservice"}
    labels["signal"] = "replicas"  # as KubeDeploymentScaledToZero labels its alerts
    alerts = [{"alert_id": "a7", "rule": "KubeDeploymentScaledToZero", "starts_at": 60.0, "labels": labels}]
    token = server.open_invocation(1)
    try:
        _run("runbook", workspace=tmp_path, env={"MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": token},
             alerts=alerts)  # fmt: skip
    finally:
        server.close_invocation()
    new = world.records[since:]
    reports = [r for r in new if isinstance(r, IncidentReport)]
    assert [(r.incident_id, r.alert_ids, r.culprits, r.artifact) for r in reports] == [
        ("rb-checkoutservice-1", ["a7"], ["checkoutservice"], "replicas")
    ]
    interventions = [r for r in new if isinstance(r, Intervention)]
    assert [(i.tool, i.targets, i.incident_id, i.result) for i in interventions] == [
        ("scale_service", ["checkoutservice"], "rb-checkoutservice-1", "ok")
    ]
    assert world.deployment("checkoutservice")["spec"]["replicas"] == 2  # from zero: the runbook floor of two
    assert all(c.decision == "allowed" for c in new if isinstance(c, ToolCall))


@pytest.mark.slow
def test_the_react_agent_works_through_the_proxy_and_the_real_tools(
    served: tuple[World, ToolServer, str], tmp_path: Path
) -> None:
    world, server, mcp_url = served
    script = [
        Turn(
            tool_calls=(("get_topology", {}), ("get_resources", {"kind": "deployments", "name": "frontend"}))
        ),
        Turn(tool_calls=(("restart_service", {"incident_id": "fe-1", "service": "frontend"}),)),
        Turn(content="Restarted the frontend."),
    ]
    since = len(world.records)
    records: list[ModelCall] = []
    with fake_openai(script) as (upstream, _):
        proxy = MeteringProxy(upstream, UPSTREAM_KEY, records.append, world.now_s)
        base = proxy.start()
        token = server.open_invocation(2)
        try:
            _run("react", workspace=tmp_path, alerts=[], env={
                "MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": token, "OPENAI_BASE_URL": base,
                "OPENAI_API_KEY": proxy.open_invocation(2, 100_000),
            })  # fmt: skip
        finally:
            server.close_invocation()
            proxy.stop()
    calls = [(c.tool, c.invocation, c.decision) for c in world.records[since:] if isinstance(c, ToolCall)]
    assert calls == [("get_topology", 2, "allowed"), ("get_resources", 2, "allowed"),
                     ("restart_service", 2, "allowed")]  # fmt: skip
    assert len(records) == 3
