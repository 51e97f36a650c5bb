"""The metering proxy records exactly what the upstream served, keys each invocation, enforces budgets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from orchestrator.bundle.records import ModelCall
from orchestrator.run.metering import DEFAULT_PRICES, MeteringProxy
from tests.agents.fakeopenai import UPSTREAM_KEY, Script, Turn, fake_openai

TURNS = [
    Turn(tool_calls=(("get_alerts", {"status": "firing"}),), prompt_tokens=120, completion_tokens=15),
    Turn(content="All quiet.", prompt_tokens=300, completion_tokens=7),
]


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def proxied() -> Iterator[tuple[str, MeteringProxy, Script, list[ModelCall]]]:
    records: list[ModelCall] = []
    with fake_openai(TURNS) as (upstream, script):
        proxy = MeteringProxy(upstream, UPSTREAM_KEY, records.append, Clock())
        base = proxy.start()
        try:
            yield base, proxy, script, records
        finally:
            proxy.stop()


def _chat(base: str, key: str, **extra: Any) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], **extra}
    return httpx.post(f"{base}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})


def _sse_payloads(text: str) -> list[dict[str, Any]]:
    lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def test_non_streaming_calls_are_recorded_with_the_tokens_the_upstream_served(proxied: Any) -> None:
    base, proxy, script, records = proxied
    key = proxy.open_invocation(1, None)
    first, second = _chat(base, key), _chat(base, key)
    assert first.status_code == 200 and second.status_code == 200
    assert first.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_alerts"
    assert [(r.model, r.tokens_in, r.tokens_out) for r in records] == [
        ("fake-model-1", 120, 15), ("fake-model-1", 300, 7),
    ]  # fmt: skip
    assert [r.t for r in records] == [101.0, 102.0]
    assert script.auth == [f"Bearer {UPSTREAM_KEY}"] * 2
    assert proxy.used_tokens() == 442


def test_streaming_calls_pass_through_and_record_the_final_usage_chunk(proxied: Any) -> None:
    base, proxy, script, records = proxied
    key = proxy.open_invocation(1, None)
    plain = _chat(base, key, stream=True)
    asked = _chat(base, key, stream=True, stream_options={"include_usage": True})
    assert script.requests[0]["stream_options"] == {"include_usage": True}
    plain_chunks, asked_chunks = _sse_payloads(plain.text), _sse_payloads(asked.text)
    assert not any("usage" in chunk for chunk in plain_chunks), "usage the agent did not ask for is dropped"
    assert asked_chunks[-1]["usage"]["completion_tokens"] == 7
    assert plain.text.rstrip().endswith("data: [DONE]")
    arguments = plain_chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"status": "firing"}
    assert [(r.tokens_in, r.tokens_out) for r in records] == [(120, 15), (300, 7)]


def test_an_exhausted_token_budget_is_refused_with_429_and_not_forwarded(proxied: Any) -> None:
    base, proxy, script, records = proxied
    key = proxy.open_invocation(3, 100)
    assert _chat(base, key).status_code == 200  # 135 tokens: over the budget after this call
    refused = _chat(base, key)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "token_budget_exhausted"
    assert "invocation 3" in refused.json()["error"]["message"]
    assert len(script.requests) == 1 and len(records) == 1
    fresh = proxy.open_invocation(4, 1000)
    assert _chat(base, fresh).status_code == 200


def test_only_the_current_invocation_key_is_accepted(proxied: Any) -> None:
    base, proxy, script, _ = proxied
    assert _chat(base, "anything").status_code == 401  # no invocation open
    old = proxy.open_invocation(1, None)
    new = proxy.open_invocation(2, None)
    assert _chat(base, old).status_code == 401
    assert _chat(base, UPSTREAM_KEY).status_code == 401
    models = httpx.get(f"{base}/models", headers={"Authorization": f"Bearer {new}"}).json()
    assert models["data"][0]["id"] == "fake-model-1"
    proxy.close_invocation()
    assert _chat(base, new).status_code == 401
    assert script.requests == []


def test_a_body_that_is_not_json_is_a_400_in_the_openai_error_shape(proxied: Any) -> None:
    base, proxy, _, records = proxied
    key = proxy.open_invocation(1, None)
    response = httpx.post(f"{base}/chat/completions", content=b"{nope",
                          headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert records == []


def test_the_default_price_table_prices_every_model_through_a_fallback() -> None:
    assert "*" in DEFAULT_PRICES
    assert all(price.output_usd_per_mtok >= price.input_usd_per_mtok for price in DEFAULT_PRICES.values())
