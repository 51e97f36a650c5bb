"""Baseline agents: noop, runbook, alert correlation, oracle, a ReAct agent and a retrieval-augmented one,
each a standalone command, and ``cli``, which runs any coding-agent CLI as the agent under test.

``AGENTS`` maps each name to the command that runs it (``python -m orchestrator.agents.<name>`` under the
current interpreter). Every agent speaks only the agent protocol: the tools over MCP, the alert file and
its working directory.
"""

from __future__ import annotations

import sys

AGENT_NAMES: tuple[str, ...] = ("noop", "runbook", "correlation", "oracle", "react", "rag", "cli")

AGENTS: dict[str, list[str]] = {
    name: [sys.executable, "-m", f"orchestrator.agents.{name}"] for name in AGENT_NAMES
}
