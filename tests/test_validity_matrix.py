"""The validity matrix at full length (tests/validity.py): the oracle at least 90 on every app and seed 1-5,
the no-action agent at 0 with 100 % degradation, the runbook agent strictly between; and under 2 % of the
no-action runs' alert firings attributable to no fault (the rule pack's noise). About half an hour on two
cores, so it runs with ``make validity`` (``pytest -m matrix``), not in every ``make test``. Its bundles are
kept in ``runs/validity`` (``VALIDITY_RUNS`` names another directory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.bench_alerts import noise_figure
from tests.validity import problems, run_matrix, table


@pytest.mark.matrix
@pytest.mark.timeout(5400)
def test_oracle_noop_and_runbook_bear_out_the_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    # The 45 bundles stay for reading after the test (runs/validity, or VALIDITY_RUNS): a failed claim is
    # looked into in the bundles that made it.
    runs = Path(os.environ.get("VALIDITY_RUNS", "runs/validity"))
    cells = run_matrix(runs)
    noise = noise_figure([c.bundle for c in cells if c.agent == "noop"], "the 15 no-action runs")
    with capsys.disabled():
        print("\n" + "\n".join(table(cells)) + f"\n{noise.name}: {noise.measured}")
    assert len(cells) == 45
    assert problems(cells) == []
    assert noise.passed, noise.measured
