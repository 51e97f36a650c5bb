"""Bounded input: bodies too large, too deep, with huge keys or not JSON, and unknown tools are refused with a
4xx on both faces before anything parses them further, each journaled; every string an agent writes has a
length bound in the argument models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from orchestrator.bundle.records import RECORD_ADAPTER, IncidentReport, ToolCall
from orchestrator.interface.bodies import MAX_BODY_BYTES
from orchestrator.interface.calls import CALL_DEADLINE_S, REQUEST_LIMIT
from orchestrator.interface.server import ToolServer
from orchestrator.interface.tools import TOOLS
from tests.interface.world import World

DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE = "x" * 2_000_000
CHANGE = {"incident_id": "i", "service": "frontend"}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def served(shared_ob: World) -> Iterator[ToolServer]:
    server = ToolServer(shared_ob.backend, shared_ob.records.append)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http(served: ToolServer) -> Iterator[httpx.Client]:
    token = served.open_invocation(9)
    # Every refusal must come back well before a tool call's own deadline would have passed.
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=CALL_DEADLINE_S) as client:
        yield client
    served.close_invocation()


def _journaled(world: World, since: int) -> ToolCall:
    (record,) = world.records[since:]
    assert isinstance(record, ToolCall)
    assert (record.invocation, record.decision) == (9, "denied")
    assert RECORD_ADAPTER.validate_json(record.model_dump_json()) == record  # the bundle reads it back
    return record


def _rpc(name: str, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_a_100000_deep_body_on_the_rest_mirror_is_a_400_and_journaled(
    shared_ob: World, http: httpx.Client
) -> None:
    since = len(shared_ob.records)
    answer = http.post("/tools/get_alerts", content=DEEP)
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_arguments"
    assert "nests deeper than" in answer.json()["error"]["message"]
    record = _journaled(shared_ob, since)
    assert (record.tool, record.effect) == ("get_alerts", "read")
    assert "nests deeper than" in record.reason


def test_a_100000_deep_body_on_mcp_is_a_400_and_journaled(shared_ob: World, http: httpx.Client) -> None:
    since = len(shared_ob.records)
    answer = http.post("/mcp", content=DEEP, headers=MCP_HEADERS)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32700
    record = _journaled(shared_ob, since)
    assert (record.tool, record.effect) == ("", "none")
    assert "nests deeper than" in record.reason


def test_deep_arguments_inside_an_mcp_call_are_journaled_under_the_tool_named(
    shared_ob: World, http: httpx.Client
) -> None:
    nested: Any = "x"
    for _ in range(40):
        nested = [nested]
    since = len(shared_ob.records)
    answer = http.post("/mcp", json=_rpc("get_alerts", {"status": nested}), headers=MCP_HEADERS)
    assert answer.status_code == 400
    assert _journaled(shared_ob, since).tool == "get_alerts"


def test_a_2mb_report_field_is_a_413_on_both_faces_and_journaled(
    shared_ob: World, http: httpx.Client
) -> None:
    report = {"incident_id": "inc-1", "artifact": "release", "notes": HUGE}
    since = len(shared_ob.records)
    rest = http.post("/tools/incident_report", json=report)
    assert rest.status_code == 413
    assert rest.json()["error"]["type"] == "body_too_large"
    record = _journaled(shared_ob, since)
    assert (record.tool, record.effect) == ("incident_report", "report")
    assert str(MAX_BODY_BYTES) in record.reason
    since = len(shared_ob.records)
    mcp = http.post("/mcp", json=_rpc("incident_report", {**report, "artifact": HUGE}), headers=MCP_HEADERS)
    assert mcp.status_code == 413
    assert "body_too_large" in _journaled(shared_ob, since).reason
    assert not any(isinstance(r, IncidentReport) for r in shared_ob.records)


def test_a_body_streamed_without_a_length_is_cut_at_the_cap(shared_ob: World, http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b" " * 65_536

    since = len(shared_ob.records)
    answer = http.post("/tools/get_alerts", content=chunks())
    assert answer.status_code == 413
    assert "more than" in _journaled(shared_ob, since).reason


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (json.dumps({"k" * 10_000: 1}).encode(), "a key of 10000 characters"),
        (b"{not json", "not JSON"),
        (b'{"since_s": NaN}', "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
    ],
    ids=["huge key", "broken", "NaN", "not UTF-8"],
)
def test_bodies_that_are_not_plain_json_are_a_400_on_both_faces(
    shared_ob: World, http: httpx.Client, body: bytes, why: str
) -> None:
    for path, headers in (("/tools/get_alerts", {}), ("/mcp", MCP_HEADERS)):
        since = len(shared_ob.records)
        answer = http.post(path, content=body, headers=headers)
        assert answer.status_code == 400, path
        assert why in _journaled(shared_ob, since).reason


def test_an_unknown_tool_is_refused_and_journaled_on_both_faces(shared_ob: World, http: httpx.Client) -> None:
    since = len(shared_ob.records)
    rest = http.post("/tools/kubectl_exec", json={"command": "rm -rf /"})
    assert rest.status_code == 404
    assert rest.json()["error"]["type"] == "unknown_tool"
    record = _journaled(shared_ob, since)
    assert (record.tool, record.effect, record.args) == ("kubectl_exec", "none", {})
    since = len(shared_ob.records)
    mcp = http.post("/mcp", json=_rpc("kubectl_exec", {"command": "id"}), headers=MCP_HEADERS)
    assert mcp.status_code == 200  # MCP answers a call of an unknown tool inside JSON-RPC, as an error result
    assert mcp.json()["result"]["isError"] is True
    record = _journaled(shared_ob, since)
    assert (record.tool, record.args) == ("kubectl_exec", {"command": "id"})


def test_a_refused_request_without_the_token_is_not_journaled(shared_ob: World, served: ToolServer) -> None:
    since = len(shared_ob.records)
    served.open_invocation(9)
    answer = httpx.post(f"{served.base_url}/tools/get_alerts", content=DEEP)
    served.close_invocation()
    assert answer.status_code == 401
    assert shared_ob.records[since:] == []


def _strings_and_collections(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(schema, dict):
        if schema.get("type") in ("string", "array", "object"):
            yield path, schema
        for key, value in schema.items():
            yield from _strings_and_collections(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _strings_and_collections(value, f"{path}[{index}]")


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_string_list_and_mapping_an_agent_writes_has_a_length_bound(name: str) -> None:
    for path, node in _strings_and_collections(TOOLS[name].schema()):
        kind = node["type"]
        if kind == "string":
            assert "maxLength" in node or "enum" in node or "const" in node, f"{name}{path}"
        elif kind == "array":
            assert "maxItems" in node, f"{name}{path}"
        elif node.get("additionalProperties") is not False:
            assert "maxProperties" in node, f"{name}{path}"
            assert "maxLength" in node.get("propertyNames", {}), f"{name}{path}: keys"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("incident_report", {"incident_id": "i", "artifact": "release:" + "x" * 400}, "artifact"),
        ("incident_report", {"incident_id": "i", "artifact": "pod", "notes": "n" * 4001}, "notes"),
        ("incident_report", {"incident_id": "i", "artifact": "pod", "alert_ids": ["a" * 201]}, "alert_ids"),
        ("get_alerts", {"rule": "r" * 254}, "rule"),
        ("get_events", {"name": "e" * 254}, "name"),
        ("update_config", {**CHANGE, "env": {"A": "v" * 4097}}, "env"),
        ("update_config", {**CHANGE, "env": {"A" * 254: "v"}}, "env"),
        ("propose_patch", {**CHANGE, "path": "a", "diff": "d" * 100_001}, "diff"),
    ],
    ids=["artifact", "notes", "alert id", "rule", "event name", "env value", "env key", "diff"],
)
def test_an_overlong_field_is_an_invalid_argument_naming_it(
    shared_ob: World, tool: str, arguments: dict[str, Any], field: str
) -> None:
    outcome = shared_ob.caller().call(tool, arguments)
    assert outcome["error"]["type"] == "invalid_arguments"
    assert field in outcome["error"]["message"]


def test_requests_past_the_per_invocation_limit_are_refused_with_429_and_journaled_as_one_count(
    shared_ob: World, http: httpx.Client, served: ToolServer
) -> None:
    since = len(shared_ob.records)
    served.caller.request_limit = 3
    try:
        statuses = [http.post("/tools/kubectl_exec", json={}).status_code for _ in range(3)]
        statuses += [http.post("/tools/get_alerts", content=DEEP).status_code for _ in range(4)]
        statuses.append(http.post("/tools/get_topology", json={}).status_code)
        served.close_invocation()
    finally:
        served.caller.request_limit = REQUEST_LIMIT
    assert statuses == [404] * 3 + [429] * 5
    calls = [r for r in shared_ob.records[since:] if isinstance(r, ToolCall)]
    assert [(c.tool, c.decision) for c in calls] == [("kubectl_exec", "denied")] * 3 + [("", "denied")]
    assert calls[-1].reason.startswith("rate_limited: 5 more requests past the limit of 3 per invocation")
