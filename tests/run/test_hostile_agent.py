"""A whole short marathon with an agent that sends the tool server hostile calls: every boundary still gets
its invocation on time, each call is answered and journaled, and the run completes."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.verify import verify_bundle
from orchestrator.run.config import make_config
from orchestrator.run.runner import run_marathon

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
    pytest.mark.skipif(shutil.which("curl") is None, reason="the hostile agent needs curl"),
]
AGENT = Path(__file__).with_name("hostile_agent.sh")
STATUSES = {
    "grep": "200",
    "rest-deep": "400",
    "mcp-deep": "400",
    "rest-huge": "413",
    "mcp-huge": "413",
    "unknown": "404",
    "not-json": "400",
    "alerts": "200",
}
DELTA_S = 20


def test_an_agent_sending_hostile_calls_is_invoked_at_every_boundary_and_the_run_completes(
    tmp_path: Path,
) -> None:
    config = make_config(
        app="online-boutique", seed=5, faults=0, delta_s=DELTA_S, budget_s=15.0, injection_period_s=60,
        observation_period_s=40, min_duration_s=120, max_duration_s=300, quiet=True,
        agent_cmd=f"bash {AGENT}", runs_root=tmp_path / "runs", out=tmp_path / "run", baseline=False,
    )  # fmt: skip
    result = run_marathon(config)
    assert result.reason == "completed"
    assert verify_bundle(result.bundle_dir).ok
    bundle = read_bundle(result.bundle_dir)
    boundaries = list(range(1, 6))
    assert [(i.n, i.start_s, i.timed_out, i.exit_code) for i in bundle.invocations] == [
        (n, float(DELTA_S * n), False, 0) for n in boundaries
    ]
    lines = (result.run_dir / "workspace" / "statuses.txt").read_text().splitlines()
    expected = [f"{n} {call} {code}" for n in boundaries for call, code in STATUSES.items()]
    assert sorted(lines) == sorted(expected)
    decisions = Counter((c.invocation, c.tool, c.decision) for c in bundle.tool_calls)
    for n in boundaries:
        assert decisions[(n, "get_logs", "allowed")] == 1
        assert decisions[(n, "get_alerts", "denied")] == 1  # the deep body on the REST mirror
        assert decisions[(n, "incident_report", "denied")] == 1  # the 2 MB field on the REST mirror
        assert decisions[(n, "kubectl_exec", "denied")] == 1
        assert decisions[(n, "", "denied")] == 3  # MCP: deep, 2 MB and not JSON, before any tool is named
        assert decisions[(n, "get_alerts", "allowed")] == 1
    assert not bundle.incident_reports and not bundle.forbidden
    assert "marathon_score" in result.score
