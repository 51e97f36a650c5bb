"""The claims the validity matrix checks (tests/validity.py ``problems``), on hand-made cells."""

from __future__ import annotations

from tests.validity import Cell, problems, table

OB1 = "on online-boutique seed 1"


def _cells(oracle: float, noop: float, runbook: float, *, level: float = 100.0) -> list[Cell]:
    return [
        Cell("online-boutique", 1, "oracle", oracle, 10.0, 50, 1.0),
        Cell("online-boutique", 1, "noop", noop, level, 50, 1.0),
        Cell("online-boutique", 1, "runbook", runbook, 80.0, 50, 1.0),
    ]


def test_a_matrix_that_bears_out_the_claims_has_no_problem() -> None:
    assert problems(_cells(93.0, 0.0, 45.5)) == []


def test_an_oracle_under_90_is_named() -> None:
    assert problems(_cells(89.9, 0.0, 45.5)) == ["oracle on online-boutique seed 1: 89.9 < 90"]


def test_a_noop_that_scores_or_is_not_the_baseline_is_named() -> None:
    assert problems(_cells(93.0, 3.3, 45.5)) == [f"noop {OB1}: score 3.3, degradation 100.0 %"]
    assert problems(_cells(93.0, 0.0, 45.5, level=97.0)) == [f"noop {OB1}: score 0.0, degradation 97.0 %"]


def test_a_runbook_at_either_end_or_without_them_is_named() -> None:
    assert problems(_cells(93.0, 0.0, 93.0))[0].startswith(f"runbook {OB1}: 93.0 not strictly")
    assert problems(_cells(93.0, 0.0, 0.0))[0].startswith(f"runbook {OB1}: 0.0 not strictly")
    alone = [c for c in _cells(93.0, 0.0, 40.0) if c.agent == "runbook"]
    assert problems(alone) == [f"runbook {OB1}: 40.0 not strictly between (noop -, oracle -)"]


def test_the_table_has_a_line_per_app_and_agent_with_every_seed() -> None:
    cells = [*_cells(93.0, 0.0, 45.5), Cell("online-boutique", 2, "oracle", 95.1, 9.0, 48, 1.0)]
    lines = table(cells)
    assert len(lines) == 3
    assert "oracle   online-boutique  seeds 1,2: score 93.0 / 95.1; degradation % 10.0 / 9.0" in lines
