"""The agent interface's latency for ``make bench``: tool calls over MCP (streamable HTTP, as every agent
makes them) against a served Online Boutique twin, p50 and p95 per tool, what opening a session costs, and
what a built-in agent's invocation costs when it has nothing to do.

``get_alerts`` and ``incident_report`` touch no cluster: their figure is the MCP round trip and the tool
server's own work (policy, journal). ``get_resources`` reads the twin's Kubernetes API as well.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.agents.mcpclient import ToolClient
from orchestrator.interface.server import ToolServer
from orchestrator.run.invoking import AgentProcess, agent_environment
from orchestrator.run.observing import write_json_atomically
from orchestrator.run.sandbox import Sandbox
from tests.benchkit import Figure
from tests.interface.world import running_world

ROUNDS = 60
TARGET_MS = 10.0
INVOCATIONS = 15
INVOCATION_TARGET_MS = 100.0
CALLS: tuple[tuple[str, dict[str, object]], ...] = (
    ("get_alerts", {"status": "firing"}),
    (
        "incident_report",
        {
            "incident_id": "INC-1",
            "alert_ids": [],
            "culprit_services": ["cartservice"],
            "artifact": "config",
            "status": "open",
            "notes": "bench",
        },
    ),  # fmt: skip
    ("get_resources", {"kind": "deployments", "name": "cartservice"}),
)


def _timings(action: Callable[[], object], rounds: int) -> list[float]:
    action()  # the first call warms caches and connections
    found = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        found.append(1000.0 * (time.perf_counter() - started))
    return found


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _invocations(server: ToolServer, mcp_url: str, directory: Path, rounds: int) -> list[float]:
    """Wall ms of ``rounds`` invocations of the runbook agent with an empty inbox, made as a run makes them:
    forked from its warm template inside the sandbox, where it opens and closes one MCP session through the
    sandbox's relay. The first invocation, which waits for the template's imports, is left out."""
    sandbox = Sandbox(workspace=directory / "workspace", inbox_dir=directory / "inbox")
    sandbox.open([mcp_url])
    alerts = directory / "inbox" / "alerts.json"
    write_json_atomically(alerts, [])
    command = [sys.executable, "-m", "orchestrator.agents.runbook"]
    agent = AgentProcess(command, workspace=directory / "workspace", log_path=directory / "agent.log",
                         sandbox=sandbox)  # fmt: skip
    found = []
    try:
        for n in range(1, rounds + 2):
            protocol = {
                "MARATHON_INVOCATION": str(n), "MARATHON_DEADLINE": f"{time.time() + 60:.3f}",
                "MARATHON_ALERTS": sandbox.inside(alerts), "MARATHON_APP": "online-boutique",
                "MARATHON_NAMESPACE": "online-boutique", "MARATHON_WORKSPACE": agent.cwd,
                "MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": server.open_invocation(n),
            }  # fmt: skip
            try:
                outcome = agent.invoke(n, env=agent_environment(protocol), budget_s=60.0)
            finally:
                server.close_invocation()
            if outcome.exit_code != 0:
                log = (directory / "agent.log").read_text(encoding="utf-8")[-2000:]
                raise RuntimeError(f"invocation {n} ended with {outcome}: {log}")
            if n > 1:
                found.append(1000.0 * outcome.wall_s)
    finally:
        agent.close()
        sandbox.close()
    return found


def bench() -> list[Figure]:
    rows: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp, running_world("online-boutique", directory=Path(tmp)) as world:
        server = ToolServer(world.backend, world.records.append)
        mcp_url, _ = server.start()
        try:
            token = server.open_invocation(1)
            opened = _timings(lambda: ToolClient(mcp_url, token).__enter__().close(), 10)
            with ToolClient(mcp_url, token) as client:
                for name, args in CALLS:
                    ms = _timings(lambda name=name, args=args: client.call(name, **args), ROUNDS)
                    p50, p95 = statistics.median(ms), _percentile(ms, 95)
                    limit = TARGET_MS if name == "get_alerts" else None
                    shown = f"{p50:.1f} ms (p95 {p95:.1f})"
                    rows.append(Figure(f"MCP tool call {name}, p50", p50, "ms", limit, shown=shown))
            rows.append(Figure("MCP session open + close, median", statistics.median(opened), "ms"))
            server.close_invocation()
            walls = _invocations(server, mcp_url, Path(tmp) / "agent", INVOCATIONS)
            shown = f"{statistics.median(walls):.0f} ms ({min(walls):.0f}-{max(walls):.0f})"
            rows.append(
                Figure(f"runbook agent invocation with nothing to do, median of {INVOCATIONS}",
                       statistics.median(walls), "ms", INVOCATION_TARGET_MS, shown=shown)  # fmt: skip
            )
        finally:
            server.close_invocation()
            server.stop()
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
