"""The validity matrix at full length (tests/validity.py): the oracle at least 90 on every app and seed 1-5,
the no-action agent at 0 with 100 % degradation, the runbook agent strictly between; and under 2 % of the
no-action runs' alert firings attributable to no fault (the rule pack's noise). About half an hour on two
cores, so it runs with ``make validity`` (``pytest -m matrix``), not in every ``make test``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_alerts import noise_figure
from tests.validity import problems, run_matrix, table


@pytest.mark.matrix
@pytest.mark.timeout(5400)
def test_oracle_noop_and_runbook_bear_out_the_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = run_matrix(tmp_path / "runs")
    noise = noise_figure([c.bundle for c in cells if c.agent == "noop"], "the 15 no-action runs")
    with capsys.disabled():
        print("\n" + "\n".join(table(cells)) + f"\n{noise.name}: {noise.measured}")
    assert len(cells) == 45
    assert problems(cells) == []
    assert noise.passed, noise.measured
