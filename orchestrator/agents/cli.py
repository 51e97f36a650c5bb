"""Runs a coding-agent CLI as the agent under test: a fresh CLI process per invocation, wired to the
marathon's tools and to the metering proxy, with a prompt built from the invocation's inputs.

Use it as ``--agent-cmd "<venv>/bin/python -m orchestrator.agents.cli -- <cli command...>"`` or as
``--agent cli --agent-option command="<cli command...>"``. Before each invocation it writes, in the
persistent workspace:

- ``.marathon/mcp.json``: the tool server as an MCP client configuration (``{"mcpServers": {"marathon":
  {"type": "http", "url": ..., "headers": {"Authorization": "Bearer ..."}}}}``, the form of Claude Code's
  ``--mcp-config`` file); the token is the invocation's own and expires with it;
- ``.marathon/prompt.md``: the task, the invocation number, the deadline, the app and namespace and the
  alerts, firing first.

In the command, ``{prompt}``, ``{prompt_file}``, ``{mcp_config}``, ``{mcp_url}``, ``{mcp_token}``,
``{openai_base_url}`` and ``{workspace}`` are replaced by their values (for CLIs configured by flags);
without ``{prompt}`` or ``{prompt_file}`` the prompt is given on standard input. The CLI runs in the
workspace with ``HOME`` at ``.home`` inside it (where CLIs keep their own settings and sessions, kept
between invocations), ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` as the runner gave them (the metering proxy,
which serves OpenAI's chat-completions API only, neither the Responses API nor Anthropic's Messages API) and
``MARATHON_MCP_CONFIG`` naming the configuration file. It is ended ``margin_s`` seconds before the deadline,
so that the adapter returns before the runner's budget.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.agents.inputs import AgentEnv, agent_options, load_alerts, run_main
from orchestrator.agents.mcpclient import TOKEN_ENV, URL_ENV
from orchestrator.agents.react import alert_lines
from orchestrator.errors import AgentError, ConfigError

log = logging.getLogger("orchestrator.agents.cli")
NAME = "cli"
CONFIG_DIR = ".marathon"
HOME_DIR = ".home"
DEFAULT_MARGIN_S = 5.0
PLACEHOLDERS = ("prompt", "prompt_file", "mcp_config", "mcp_url", "mcp_token", "openai_base_url", "workspace")

TASK = """You are the on-call SRE of the application {app} (Kubernetes namespace {namespace}), invoked as
invocation {invocation} of a long run in which faults arrive continuously and overlap. You must finish before
{deadline}. Your working directory persists between invocations: keep notes there.

The marathon tools are on the MCP server named "marathon": read alerts, metrics, logs, traces, topology,
resources, events, rollout history, config, source and feature flags, and repair (rollback_service,
restart_service, scale_service, update_config, set_feature_flag, source patches). For every distinct problem
file an incident with incident_report (a stable incident_id, the ids of the alerts it explains, the culprit
services and the responsible artifact as KIND or KIND:REFERENCE, KIND one of release, config, resources,
replicas, probe, service, credentials, feature-flag, network, dns, pod, cpu, memory, io, node), then repair
with the smallest safe change naming the incident_id. Never touch other namespaces, never delete deployments
or namespaces, never read secrets.

Alerts (times in seconds since the run started):
{alerts}
"""


@dataclass(frozen=True)
class Prepared:
    """What one invocation of the CLI is: its command line, environment, standard input and time limit."""

    argv: list[str]
    env: dict[str, str]
    stdin: str | None
    timeout_s: float | None


def mcp_config(url: str, token: str) -> dict[str, object]:
    """The MCP client configuration of the tool server (no side effects)."""
    server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcpServers": {"marathon": server}}


def prompt_of(env: AgentEnv, lines: list[str]) -> str:
    """The CLI's prompt for this invocation (no side effects)."""
    deadline = "the runner's budget" if env.deadline is None else (
        time.strftime("%H:%M:%S UTC", time.gmtime(env.deadline)) + f" (Unix time {env.deadline:.0f})")
    return TASK.format(app=env.app, namespace=env.namespace, invocation=env.invocation, deadline=deadline,
                       alerts="\n".join(lines) if lines else "(none)")  # fmt: skip


def expand(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The command with ``{name}`` placeholders replaced; other braces are left as they are (no side
    effects)."""
    expanded = []
    for arg in command:
        for name in PLACEHOLDERS:
            arg = arg.replace("{" + name + "}", values[name])
        expanded.append(arg)
    return expanded


def prepare(env: AgentEnv, command: Sequence[str], environ: Mapping[str, str], *, margin_s: float,
            now: float) -> Prepared:  # fmt: skip
    """Write the invocation's MCP configuration and prompt in the workspace, and say how to start the CLI."""
    url, token = environ.get(URL_ENV), environ.get(TOKEN_ENV)
    if not url or not token:
        raise AgentError(f"{URL_ENV} and {TOKEN_ENV} must be set: the CLI would have no tools")
    workspace = Path(env.workspace)
    folder = workspace / CONFIG_DIR
    folder.mkdir(exist_ok=True)
    (workspace / HOME_DIR).mkdir(exist_ok=True)
    config_path = folder / "mcp.json"
    config_path.write_text(json.dumps(mcp_config(url, token), indent=1), encoding="utf-8")
    prompt = prompt_of(env, alert_lines(load_alerts(env.alerts_path), set()))
    prompt_path = folder / "prompt.md"
    prompt_path.write_text(prompt, encoding="utf-8")
    values = {"prompt": prompt, "prompt_file": str(prompt_path), "mcp_config": str(config_path),
              "mcp_url": url, "mcp_token": token, "openai_base_url": environ.get("OPENAI_BASE_URL", ""),
              "workspace": str(workspace)}  # fmt: skip
    uses_prompt = any("{prompt}" in arg or "{prompt_file}" in arg for arg in command)
    child = {**environ, "HOME": str(workspace / HOME_DIR), "MARATHON_MCP_CONFIG": str(config_path)}
    timeout = None if env.deadline is None else max(1.0, env.deadline - now - margin_s)
    return Prepared(argv=expand(command, values), env=child, stdin=None if uses_prompt else prompt,
                    timeout_s=timeout)  # fmt: skip


def command_of(argv: Sequence[str], options: Mapping[str, object]) -> list[str]:
    """The CLI's command: what follows ``--`` on the adapter's command line, else the ``command`` option."""
    if "--" in argv:
        command = list(argv[list(argv).index("--") + 1:])
    else:
        try:
            command = shlex.split(str(options.get("command", "")))
        except ValueError as exc:
            raise ConfigError(f"the cli agent's command option is not a command line: {exc}") from exc
    if not command:
        raise ConfigError("no CLI command: give it after -- or as the cli agent's command option")
    return command


def launch(prepared: Prepared, *, cwd: Path) -> int:
    """Run the CLI to its end or its time limit (then its whole process group is killed); its exit code."""
    try:
        stdin = subprocess.PIPE if prepared.stdin is not None else subprocess.DEVNULL
        process = subprocess.Popen(prepared.argv, cwd=cwd, env=prepared.env, text=True, stdin=stdin,
                                   start_new_session=True)  # fmt: skip
    except OSError as exc:
        raise AgentError(f"cannot start {prepared.argv[0]}: {exc}") from exc
    try:
        process.communicate(prepared.stdin, timeout=prepared.timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("the CLI is still running at the deadline's margin: ending it")
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=2.0)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return process.returncode


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(lambda: _main(sys.argv[1:] if argv is None else argv))


def _main(argv: Sequence[str]) -> int:
    env = AgentEnv.from_env()
    options = agent_options(NAME)
    command = command_of(argv, options)
    margin = float(options.get("margin_s", DEFAULT_MARGIN_S))
    prepared = prepare(env, command, os.environ, margin_s=margin, now=time.time())
    log.info("invocation %d: %s", env.invocation, shlex.join(command))
    code = launch(prepared, cwd=Path(env.workspace))
    log.info("the CLI exited with %d", code)
    return code


if __name__ == "__main__":
    sys.exit(main())
