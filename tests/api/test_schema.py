"""Property tests of the HTTP API from its own OpenAPI schema (schemathesis, positive and negative data):
no request gets a server error, a status code the schema does not list, or a body that breaks it."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.live import AUTH, Server

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
