"""The nightly matrix: its file is validated with the field named, expands app x agent x seed, and
``marathon nightly --once`` runs it into the registry and onto the leaderboard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.api.leaderboard import leaderboard_rows
from orchestrator.api.nightly import load_nightly, matrix
from orchestrator.api.registry import Registry
from orchestrator.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, document: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_the_shipped_nightly_file_is_valid_and_expands_to_every_cell() -> None:
    config = load_nightly(REPO / "deploy" / "nightly.yaml")
    cells = matrix(config)
    assert len(cells) == len(config.apps) * len(config.agents) * len(config.seeds)
    assert {(c.app, c.agent, c.seed) for c in cells} == {
        (a, g, s) for a in config.apps for g in config.agents for s in config.seeds
    }


def test_a_bad_nightly_file_is_refused_naming_file_field_and_value(tmp_path: Path) -> None:
    document = {"cron": "every night", "apps": ["online-boutique"], "agents": ["noop"], "seeds": [1],
                "concurrency": 0}  # fmt: skip
    path = _write(tmp_path / "n.yaml", document)
    with pytest.raises(ConfigError) as caught:
        load_nightly(path)
    fields = {p.field for p in caught.value.problems}
    assert fields == {"cron", "concurrency"}
    assert all(p.file == str(path) for p in caught.value.problems)
    assert "'every night'" in str(caught.value)


@pytest.mark.slow
def test_nightly_once_runs_a_two_cell_matrix_into_the_registry_and_the_leaderboard(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "nightly.yaml",
        {"cron": "0 2 * * *", "apps": ["online-boutique"], "agents": ["noop", "runbook"], "seeds": [3],
         "concurrency": 2, "baseline": False,
         "schedule": {"faults": 4, "injection_period_s": 360, "observation_period_s": 240}},
    )  # fmt: skip
    data = tmp_path / "control"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "nightly", "--once", "--config", str(config),
         "--data", str(data)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    registry = Registry(f"sqlite:///{data / 'registry.sqlite'}")
    total, rows = registry.page()
    assert total == 2
    assert sorted(r.agent for r in rows) == ["noop", "runbook"]
    assert all(r.status == "finished" and r.source.startswith("nightly") for r in rows)
    board = leaderboard_rows(registry.scored())
    assert sorted((b.app, b.agent) for b in board) == [
        ("online-boutique", "noop"),
        ("online-boutique", "runbook"),
    ]
    assert {b.latest.run_id for b in board} == {r.id for r in rows}
