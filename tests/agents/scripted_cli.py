"""A scripted stand-in for a coding-agent CLI, for the CLI adapter's tests: it does what such a CLI does.

It reads the MCP configuration file it is pointed at (``--mcp-config``), connects to the server named in it
with the headers it gives, reads its prompt (``--prompt-file``, else standard input), then loops: it asks the
model at ``OPENAI_BASE_URL`` with the server's tools, calls every tool the model asks for, and stops at the
first answer without a tool call. It appends one line per invocation to ``transcript.jsonl`` in its working
directory. It imports nothing from the tests, so it runs inside the agent sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from orchestrator.agents.chat import ChatModel, openai_tools
from orchestrator.agents.mcpclient import ToolClient

MODEL = "scripted-cli-model"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp-config", required=True)
    parser.add_argument("--prompt-file")
    args = parser.parse_args()
    server = json.loads(Path(args.mcp_config).read_text())["mcpServers"]["marathon"]
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    prompt = Path(args.prompt_file).read_text() if args.prompt_file else sys.stdin.read()
    model = ChatModel(os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"], MODEL)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    called: list[str] = []
    with ToolClient(server["url"], token) as client:
        tools = openai_tools(client.list_tools())
        for _ in range(8):
            completion = model.complete(messages, tools, timeout_s=30.0)
            message = {k: v for k, v in completion.message.items() if k in ("role", "content", "tool_calls")}
            messages.append(message)
            calls = completion.message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                name = call["function"]["name"]
                outcome = client.call(name, **json.loads(call["function"]["arguments"] or "{}"))
                called.append(f"{name}:{outcome.get('ok')}")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(outcome)})
    model.close()
    line = {"home": os.environ.get("HOME"), "prompt_head": prompt.splitlines()[0], "called": called}
    with Path("transcript.jsonl").open("a", encoding="utf-8") as transcript:
        transcript.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
