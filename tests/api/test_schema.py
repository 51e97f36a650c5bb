"""The HTTP API's OpenAPI schema: property tests from it (schemathesis, positive and negative data: no
request gets a server error, a status code the schema does not list, or a body that breaks it); every
operation described; the score and the live events typed; a huge invalid body refused without an echo."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from pydantic import TypeAdapter, ValidationError
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from orchestrator.api.app import Settings, create_app
from orchestrator.api.models import FaultScore, LiveEvent, Score
from orchestrator.run.events import EVENT_TYPES, Event, wire
from orchestrator.score.scorecard import score_bundle, scorecard_json
from orchestrator.score.stages import OUTCOMES
from tests.api.live import AUTH, TOKEN, Server
from tests.score.test_spec_document import _bundle, _tables, _worked_example

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 25


@pytest.mark.slow
def test_the_api_answers_every_generated_request_within_its_schema(tmp_path: Path) -> None:
    # One run at most: a schema-valid POST /runs may really start one; the rest are told 429.
    live = Server(data=tmp_path / "control", extra=("--max-active", "1")).start()
    tried: list[str] = []
    try:
        schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {op.path for op in operations} >= {"/runs", "/runs/{run_id}", "/leaderboard", "/healthz"}
        for operation in operations:
            for mode in schemathesis.GenerationMode:

                @settings(max_examples=EXAMPLES, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))  # fmt: skip
                @given(case=operation.as_strategy(generation_mode=mode))
                def exchange(case: schemathesis.Case) -> None:
                    case.call_and_validate(headers=AUTH, checks=CHECKS, timeout=30)

                try:
                    exchange()
                except Unsatisfiable:
                    # An operation without parameters or body has no invalid request to make.
                    assert mode is schemathesis.GenerationMode.NEGATIVE, operation.path
                    continue
                tried.append(f"{operation.method.upper()} {operation.path} {mode.value}")
    finally:
        live.stop()
    assert len(tried) >= len(operations) + 3, tried  # every operation, and invalid data where there can be


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The app in this process (no run is started), with a token."""
    data = tmp_path_factory.mktemp("control")
    app = create_app(Settings(db_url=f"sqlite:///{data / 'registry.sqlite'}", data_dir=data, token=TOKEN))
    with TestClient(app) as test_client:
        yield test_client


def test_every_operation_has_a_summary_a_description_and_described_responses(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    operations = [(method, path, op) for path, ops in document["paths"].items() for method, op in ops.items()]
    assert len(operations) >= 11
    for method, path, operation in operations:
        assert operation.get("summary", "").strip(), (method, path)
        assert len(operation.get("description", "").strip()) >= 20, (method, path)
        for status, response in operation["responses"].items():
            assert response.get("description", "").strip(), (method, path, status)


def test_the_score_operation_answers_the_score_model_which_is_the_scorers_json_document_key_for_key(
    client: TestClient,
) -> None:
    document = client.get("/openapi.json").json()
    ok = document["paths"]["/runs/{run_id}/score"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Score"}
    keys, outcome_keys = _tables("The `--json` document")
    assert list(document["components"]["schemas"]["Score"]["properties"]) == keys
    assert list(document["components"]["schemas"]["FaultScore"]["properties"]) == outcome_keys
    assert set(typing.get_args(FaultScore.model_fields["outcome"].annotation)) == set(OUTCOMES)
    for sandboxed in (True, False):
        written = json.loads(scorecard_json(score_bundle(_bundle(_worked_example(), sandboxed=sandboxed))))
        served = Score.model_validate(written).model_dump(mode="json", exclude_unset=True)
        assert json.dumps(served) == json.dumps(written)  # the same keys, in the same order, same values


def _example(hint: Any) -> Any:
    """A value of the type ``hint`` (an event field's annotation)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return args[-1]
    if origin in (types.UnionType, typing.Union):
        return _example(next(arg for arg in args if arg is not type(None)))
    if origin is tuple:
        return (_example(args[0]),)
    return {str: "x", int: 3, float: 1.5, bool: True}[hint]


def test_the_event_stream_is_documented_with_one_schema_per_event_type_that_real_events_satisfy(
    client: TestClient,
) -> None:
    document = client.get("/openapi.json").json()
    ok = document["paths"]["/runs/{run_id}/events"]["get"]["responses"]["200"]
    assert ok["content"]["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/LiveEvent"}
    assert "`end`" in ok["description"] and "Last-Event-ID" in ok["description"]
    schemas = document["components"]["schemas"]
    mapping = schemas["LiveEvent"]["discriminator"]["mapping"]
    assert sorted(mapping) == sorted(EVENT_TYPES)
    adapter = TypeAdapter(LiveEvent)
    for kind in typing.get_args(Event):
        hints = typing.get_type_hints(kind)
        event = kind(**{f.name: _example(hints[f.name]) for f in dataclasses.fields(kind)})
        sent = {"seq": 7, **wire(event)}
        schema = schemas[mapping[kind.TYPE].rsplit("/", 1)[1]]
        assert list(schema["properties"]) == list(sent), kind.TYPE
        parsed = adapter.validate_json(json.dumps(sent))
        assert parsed.model_dump(mode="json") == sent
    with pytest.raises(ValidationError):
        adapter.validate_python({"seq": 0, "type": "injected", "fault_id": "f000"})  # fields missing
    with pytest.raises(ValidationError):
        adapter.validate_python({"seq": 0, "type": "no-such-event"})


HUGE = 5 * 1024 * 1024


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"app": "x" * HUGE, "seed": 1, "agent": "noop"}, id="a huge string in a field"),
        pytest.param({"app": "online-boutique", "agent": "noop", "padding": "x" * HUGE},
                     id="a huge extra field without a required one"),
        pytest.param({"app": "online-boutique", "seed": 1, "agent": "noop",
                      "schedule": {f"k{i}": "x" * 100 for i in range(50_000)}}, id="fifty thousand errors"),
        pytest.param(["x" * HUGE], id="a huge body of the wrong type"),
    ],
)  # fmt: skip
def test_a_huge_invalid_body_is_refused_with_a_small_422_that_does_not_echo_it(
    client: TestClient, body: Any
) -> None:
    response = client.post("/runs", json=body, headers=AUTH)
    assert response.status_code == 422
    assert len(response.content) < 16_000, len(response.content)
    detail = response.json()["detail"]
    assert detail and all({"loc", "msg", "type"} <= set(error) for error in detail)
    assert "x" * 201 not in response.text


def test_a_value_the_runner_refuses_is_quoted_but_bounded_too(client: TestClient) -> None:
    response = client.post("/runs", json={"app": "no-such-app", "seed": 1, "agent": "noop"}, headers=AUTH)
    assert response.status_code == 422
    assert any("no-such-app" in json.dumps(error) for error in response.json()["detail"])
