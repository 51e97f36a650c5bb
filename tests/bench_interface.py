"""The agent interface's latency for ``make bench``: tool calls over MCP (streamable HTTP, as every agent
makes them) against a served Online Boutique twin, p50 and p95 per tool, and what opening a session costs.

``get_alerts`` and ``incident_report`` touch no cluster: their figure is the MCP round trip and the tool
server's own work (policy, journal). ``get_resources`` reads the twin's Kubernetes API as well.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.agents.mcpclient import ToolClient
from orchestrator.interface.server import ToolServer
from tests.benchkit import Figure
from tests.interface.world import running_world

ROUNDS = 60
TARGET_MS = 10.0
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
        finally:
            server.close_invocation()
            server.stop()
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
