"""Agent invocations: fresh process group, killed as a whole at the budget, allow-listed environment."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from orchestrator.run.invoking import AgentProcess, agent_environment


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child that nobody reaped yet is a zombie: dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_an_agent_that_outlives_its_budget_is_killed_with_its_children(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > child.pid; echo $$ > parent.pid; sleep 60"
    agent = AgentProcess(["bash", "-c", script], workspace=tmp_path / "ws", log_path=tmp_path / "agent.log")
    outcome = agent.invoke(1, env=agent_environment({}), budget_s=1.0)
    assert outcome.timed_out
    assert outcome.exit_code is None
    child = int((tmp_path / "ws" / "child.pid").read_text())
    parent = int((tmp_path / "ws" / "parent.pid").read_text())
    deadline = time.monotonic() + 5
    while (_alive(child) or _alive(parent)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    assert not _alive(parent)
    assert "killed at the budget" in (tmp_path / "agent.log").read_text()


def test_a_background_child_left_by_a_finished_agent_does_not_survive_the_invocation(tmp_path: Path) -> None:
    agent = AgentProcess(
        ["bash", "-c", "sleep 60 & echo $! > child.pid; exit 3"],
        workspace=tmp_path,
        log_path=tmp_path / "log",
    )
    outcome = agent.invoke(2, env=agent_environment({}), budget_s=10.0)
    assert outcome.exit_code == 3
    assert not outcome.timed_out
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_the_agent_runs_in_its_workspace_with_only_the_protocol_environment(tmp_path: Path) -> None:
    inherit = {"PATH": os.environ["PATH"], "UPSTREAM_SECRET": "s3cret", "HOME": str(tmp_path)}
    env = agent_environment({"MARATHON_INVOCATION": "7"}, inherit=inherit)
    code = "import os, json; json.dump(dict(os.environ), open('env.json', 'w')); print(os.getcwd())"
    agent = AgentProcess([sys.executable, "-c", code], workspace=tmp_path / "ws", log_path=tmp_path / "log")
    outcome = agent.invoke(7, env=env, budget_s=20.0)
    assert outcome.exit_code == 0
    seen = (tmp_path / "ws" / "env.json").read_text()
    assert '"MARATHON_INVOCATION": "7"' in seen
    assert "UPSTREAM_SECRET" not in seen
    assert str(tmp_path / "ws") in (tmp_path / "log").read_text()
