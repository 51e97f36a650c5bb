"""A minimal OpenAI-compatible chat client over httpx, and the MCP tools as OpenAI function tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from orchestrator.agents.mcpclient import ToolSpec
from orchestrator.errors import AgentError


class ModelRefused(AgentError):
    """The model endpoint refused the call (budget exhausted, bad key, bad request): stop, do not retry."""


@dataclass(frozen=True)
class Completion:
    message: dict[str, Any]
    tokens_in: int
    tokens_out: int


def openai_tools(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in the ``tools`` form of ``/chat/completions`` (no side effects)."""
    tools = []
    for spec in specs:
        parameters = dict(spec.input_schema) or {"type": "object", "properties": {}}
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        tools.append({
            "type": "function",
            "function": {"name": spec.name, "description": spec.description[:1024], "parameters": parameters},
        })  # fmt: skip
    return tools


class ChatModel:
    """``complete(messages, tools, timeout_s)`` against ``{base_url}/chat/completions``."""

    def __init__(self, base_url: str, api_key: str, model: str, *, temperature: float | None = 0.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._temperature = temperature
        self._http = httpx.Client(headers={"Authorization": f"Bearer {api_key}"})

    def close(self) -> None:
        self._http.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, timeout_s: float
                 ) -> Completion:  # fmt: skip
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
        if self._temperature is not None:
            body["temperature"] = self._temperature
        try:
            response = self._http.post(f"{self.base_url}/chat/completions", json=body, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise AgentError(f"the model endpoint failed: {exc}") from exc
        if response.status_code >= 400:
            raise ModelRefused(f"the model endpoint answered {response.status_code}: {response.text[:500]}")
        try:
            payload = response.json()
            message = payload["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            unreadable = response.text[:500]
            raise AgentError(f"the model endpoint answered an unreadable completion: {unreadable}") from exc
        usage = payload.get("usage") or {}
        return Completion(
            message=message,
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
        )
