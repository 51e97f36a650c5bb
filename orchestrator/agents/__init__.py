"""Baseline agents: noop, runbook, oracle and a ReAct agent, each a standalone command."""
