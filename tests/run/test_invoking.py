"""Agent invocations: fresh process group, killed as a whole at the budget, allow-listed environment."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.run import warmstart
from orchestrator.run.invoking import AgentProcess, agent_environment
from tests.processes import gone


def test_an_agent_that_outlives_its_budget_is_killed_with_its_children(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > child.pid; echo $$ > parent.pid; sleep 60"
    agent = AgentProcess(["bash", "-c", script], workspace=tmp_path / "ws", log_path=tmp_path / "agent.log")
    outcome = agent.invoke(1, env=agent_environment({}), budget_s=1.0)
    assert outcome.timed_out
    assert outcome.exit_code is None
    child = int((tmp_path / "ws" / "child.pid").read_text())
    parent = int((tmp_path / "ws" / "parent.pid").read_text())
    assert gone(child, parent)
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
    assert gone(child)


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


@pytest.fixture
def warm_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentProcess]:
    """An AgentProcess whose command the warm start takes: the probe module stands in for a built-in agent."""
    monkeypatch.setattr(warmstart, "AGENTS_PACKAGE", "warm_probe_")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # for the template process
    command = [sys.executable, "-m", "warm_probe_agent"]
    assert warmstart.warm_module(command) == "warm_probe_agent"
    agent = AgentProcess(command, workspace=tmp_path / "ws", log_path=tmp_path / "agent.log")
    yield agent
    agent.close()


def test_only_this_interpreter_running_a_builtin_agent_module_is_warm_started() -> None:
    builtin = [sys.executable, "-m", "orchestrator.agents.runbook"]
    assert warmstart.warm_module(builtin) == "orchestrator.agents.runbook"
    assert warmstart.warm_module(["python3.9", "-m", "orchestrator.agents.runbook"]) is None
    assert warmstart.warm_module([sys.executable, "-m", "mypackage.agent"]) is None
    assert warmstart.warm_module([sys.executable, "-m", "orchestrator.agents.runbook", "--x"]) is None
    assert warmstart.warm_module(["bash", "agent.sh"]) is None


def test_a_warm_started_agent_is_set_up_like_a_spawned_one(
    tmp_path: Path, warm_agent: AgentProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = warm_agent
    monkeypatch.setenv("UPSTREAM_SECRET", "s3cret")  # in our environment when the template starts
    inherit = {"PATH": os.environ["PATH"], "UPSTREAM_SECRET": "s3cret"}
    env = agent_environment({"MARATHON_INVOCATION": "4", "PROBE_MODE": "exit"}, inherit=inherit)
    outcome = agent.invoke(4, env=env, budget_s=30.0)
    assert outcome.exit_code == 3
    assert not outcome.timed_out
    started = json.loads((tmp_path / "ws" / "started.json").read_text())
    assert started["pid"] != os.getpid()
    assert started["pgid"] == started["pid"] == started["sid"]  # its own session and process group
    assert started["cwd"] == str(tmp_path / "ws")
    assert started["env"] == env  # exactly the protocol environment, nothing of ours
    assert started["stdin"] == ""
    log = (tmp_path / "agent.log").read_text()
    assert log.index("--- invocation 4 ---") < log.index("probe says hello on stdout")
    assert "probe says hello on stderr" in log
    assert "--- invocation 4: exit 3 after" in log
    assert "warm start failed" not in log
    template = agent._template
    assert template is not None
    assert b"UPSTREAM_SECRET" not in Path(f"/proc/{template._process.pid}/environ").read_bytes()
    second = agent.invoke(5, env=env, budget_s=30.0)  # the next invocation is a new process
    assert second.exit_code == 3
    assert json.loads((tmp_path / "ws" / "started.json").read_text())["pid"] != started["pid"]


def test_a_warm_started_agent_past_its_budget_is_killed_with_its_children(
    tmp_path: Path, warm_agent: AgentProcess
) -> None:
    agent = warm_agent
    began = time.monotonic()
    outcome = agent.invoke(1, env=agent_environment({"PROBE_MODE": "sleep"}), budget_s=3.0)
    assert outcome.timed_out
    assert outcome.exit_code is None
    assert time.monotonic() - began < 30
    started = json.loads((tmp_path / "ws" / "started.json").read_text())
    child = int((tmp_path / "ws" / "child.pid").read_text())
    assert gone(child, started["pid"])
    log = (tmp_path / "agent.log").read_text()
    assert "killed at the budget" in log and "warm start failed" not in log


def test_a_child_left_by_a_finished_warm_agent_does_not_survive(
    tmp_path: Path, warm_agent: AgentProcess
) -> None:
    agent = warm_agent
    outcome = agent.invoke(2, env=agent_environment({"PROBE_MODE": "leave-child"}), budget_s=30.0)
    assert outcome.exit_code == 3
    child = int((tmp_path / "ws" / "child.pid").read_text())
    assert gone(child)


def test_an_invocation_survives_the_death_of_the_template_and_the_next_one_is_spawned(
    tmp_path: Path, warm_agent: AgentProcess
) -> None:
    agent = warm_agent
    env = agent_environment({"PROBE_MODE": "sleep"})
    started_file = tmp_path / "ws" / "child.pid"

    def kill_template_once_the_invocation_runs() -> None:
        # Waits for an observable sign that the invocation started, not for a fixed time.
        while not started_file.exists():
            time.sleep(0.02)
        os.kill(_template_pid(agent), signal.SIGKILL)

    killer = threading.Thread(target=kill_template_once_the_invocation_runs, daemon=True)
    killer.start()
    outcome = agent.invoke(1, env=env, budget_s=20.0)
    killer.join()
    assert outcome.exit_code == -1 and not outcome.timed_out
    started = json.loads((tmp_path / "ws" / "started.json").read_text())
    child = int((tmp_path / "ws" / "child.pid").read_text())
    assert gone(child, started["pid"])  # its process group went with the invocation
    second = agent.invoke(2, env=agent_environment({"PROBE_MODE": "exit"}), budget_s=20.0)
    assert second.exit_code == 3
    log = (tmp_path / "agent.log").read_text()
    assert "warm start failed" in log and "spawning the command instead" in log


def _template_pid(agent: AgentProcess) -> int:
    template = agent._template
    assert template is not None
    return template._process.pid


def test_a_prepared_template_imports_in_the_background_and_serves_the_first_invocation(
    tmp_path: Path, warm_agent: AgentProcess
) -> None:
    agent = warm_agent
    agent.prepare()  # returns before the template has imported anything
    started = _template_pid(agent)
    outcome = agent.invoke(1, env=agent_environment({"PROBE_MODE": "exit"}), budget_s=60.0)
    assert outcome.exit_code == 3
    assert _template_pid(agent) == started  # the invocation was forked from it, not from a second one
    agent.prepare()  # a template already there is kept
    assert _template_pid(agent) == started
    assert "warm start failed" not in (tmp_path / "agent.log").read_text()
