"""The model-free baselines are deterministic: the same seed twice gives byte-identical bundle data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.run.config import make_config
from orchestrator.run.runner import run_marathon

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]
SHORT = {
    "app": "online-boutique", "seed": 2, "faults": 5, "delta_s": 60, "budget_s": 30.0,
    "injection_period_s": 480, "observation_period_s": 180, "min_duration_s": 120, "max_duration_s": 240,
    "quiet": True, "baseline": False,
}  # fmt: skip


@pytest.mark.parametrize("agent", ["runbook", "correlation", "oracle"])
def test_the_same_seed_twice_gives_identical_bundle_data(agent: str, tmp_path: Path) -> None:
    results = [
        run_marathon(make_config(**SHORT, agent=agent, runs_root=tmp_path / "runs", out=tmp_path / name))
        for name in ("first", "second")
    ]
    first, second = (result.bundle_dir / "data" for result in results)
    assert all(result.reason == "completed" for result in results)
    names = sorted(p.name for p in first.iterdir() if p.name != "runtime.json")  # wall-clock facts only
    assert names == sorted(p.name for p in second.iterdir() if p.name != "runtime.json")
    assert "agent.jsonl" in names
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{agent}: {name} differs"
    assert '"kind":"incident_report"' in (first / "agent.jsonl").read_text()  # it did something to repeat
