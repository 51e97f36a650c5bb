"""The served interface: the REST mirror (driven by a bash agent with curl) and MCP over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from orchestrator.bundle.records import IncidentReport, ToolCall
from orchestrator.interface.server import ToolServer
from orchestrator.interface.tools import TOOLS
from tests.interface.world import World

AGENT = r"""
set -euo pipefail
call() {
  curl -sS -X POST -H "Authorization: Bearer $MARATHON_TOKEN" -H 'Content-Type: application/json' \
    -d "$2" "$MARATHON_REST_URL/tools/$1"
  echo
}
call get_alerts '{"status": "firing"}'
call get_resources '{"kind": "deployments", "name": "frontend"}'
call incident_report '{"incident_id": "inc-1", "culprit_services": ["frontend"], "artifact": "pod"}'
curl -sS -o /dev/null -w '%{http_code}\n' -X POST -d '{}' "$MARATHON_REST_URL/tools/get_alerts"
"""


@pytest.fixture(scope="module")
def served(shared_ob: World) -> Iterator[tuple[ToolServer, str, str]]:
    server = ToolServer(shared_ob.backend, shared_ob.records.append)
    mcp_url, rest_url = server.start()
    try:
        yield server, mcp_url, rest_url
    finally:
        server.stop()


def _new(world: World, since: int) -> list[Any]:
    return world.records[since:]


def test_a_bash_agent_with_curl_completes_its_calls_over_the_rest_mirror(
    shared_ob: World, served: tuple[ToolServer, str, str]
) -> None:
    if shutil.which("curl") is None or shutil.which("bash") is None:
        pytest.skip("needs bash and curl")
    server, _, rest_url = served
    since = len(shared_ob.records)
    token = server.open_invocation(3)
    env = {**os.environ, "MARATHON_REST_URL": rest_url, "MARATHON_TOKEN": token}
    done = subprocess.run(
        ["bash", "-c", AGENT], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    server.close_invocation()
    *answers, status = done.stdout.strip().splitlines()
    results = [json.loads(line) for line in answers]
    assert [r["ok"] for r in results] == [True, True, True]
    assert results[1]["result"]["items"][0]["name"] == "frontend"
    assert status == "401"
    calls = [r for r in _new(shared_ob, since) if isinstance(r, ToolCall)]
    assert [(c.tool, c.invocation) for c in calls] == [
        ("get_alerts", 3),
        ("get_resources", 3),
        ("incident_report", 3),
    ]
    reports = [r for r in _new(shared_ob, since) if isinstance(r, IncidentReport)]
    assert [(r.incident_id, r.culprits, r.artifact) for r in reports] == [("inc-1", ["frontend"], "pod")]


def test_the_rest_mirror_lists_tools_and_answers_401_404_and_400(served: tuple[ToolServer, str, str]) -> None:
    server, _, rest_url = served
    assert httpx.get(f"{rest_url}/tools").status_code == 401
    token = server.open_invocation(4)
    headers = {"Authorization": f"Bearer {token}"}
    listing = httpx.get(f"{rest_url}/tools", headers=headers).json()["tools"]
    assert [t["name"] for t in listing] == list(TOOLS)
    assert all(t["schema"]["type"] == "object" and t["description"] for t in listing)
    assert httpx.post(f"{rest_url}/tools/kubectl_exec", headers=headers, json={}).status_code == 404
    assert (
        httpx.post(f"{rest_url}/tools/get_alerts", headers={"Authorization": "Bearer nope"}).status_code
        == 401
    )
    bad = httpx.post(f"{rest_url}/tools/get_alerts", headers=headers, content=b"{not json")
    assert bad.status_code == 400
    server.close_invocation()
    assert httpx.get(f"{rest_url}/tools", headers=headers).status_code == 401


async def _mcp_session(
    url: str, token: str | None, *, mode: str = "auto"
) -> tuple[list[str], dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        listed = await client.list_tools()
        result = await client.call_tool("get_resources", {"kind": "deployments", "name": "cartservice"})
        assert not result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        return [t.name for t in listed.tools], json.loads(text)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_mcp_client_lists_and_calls_tools_with_the_token(
    shared_ob: World, served: tuple[ToolServer, str, str], mode: str
) -> None:
    server, mcp_url, _ = served
    since = len(shared_ob.records)
    token = server.open_invocation(5)
    names, answer = asyncio.run(_mcp_session(mcp_url, token, mode=mode))
    server.close_invocation()
    assert names == list(TOOLS)
    assert answer["ok"] and answer["result"]["items"][0]["name"] == "cartservice"
    calls = [r for r in _new(shared_ob, since) if isinstance(r, ToolCall)]
    assert [(c.tool, c.invocation, c.decision) for c in calls] == [("get_resources", 5, "allowed")]


def test_mcp_is_refused_without_the_token_and_after_the_invocation_closes(
    shared_ob: World, served: tuple[ToolServer, str, str]
) -> None:
    server, mcp_url, _ = served
    since = len(shared_ob.records)
    token = server.open_invocation(6)
    with pytest.raises(BaseException, match="TaskGroup"):
        asyncio.run(_mcp_session(mcp_url, None))
    server.close_invocation()
    with pytest.raises(BaseException, match="TaskGroup"):
        asyncio.run(_mcp_session(mcp_url, token))
    raw = httpx.post(
        mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert raw.status_code == 401
    assert _new(shared_ob, since) == []
