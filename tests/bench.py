"""``make bench``: runs every ``tests/bench_*.py`` module's ``bench()`` and prints one table of figures.

Performance targets live here, never in tests: each row is a ``benchkit.Figure`` (judged pass/fail against
its limit) or a plain (what, measured, target) row. ``--save-baseline`` writes the measured figures to
``tests/bench_baseline.json``; later runs show each figure's ratio to it. ``--only a,b`` runs some areas.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "bench_baseline.json"
LOOP_STEPS = 20_000_000


def _loop_seconds() -> float:
    """Wall seconds of an empty Python loop of ``LOOP_STEPS`` steps: how fast this machine runs Python right
    now. A virtual machine's speed drifts with its neighbours' load; the bench measures it before and after
    its figures, so that a change of single-thread speed is seen beside them (a slowdown of the host's
    other cores or of its I/O may not show here)."""
    started = time.perf_counter()
    for _ in range(LOOP_STEPS):
        pass
    return time.perf_counter() - started


def _rows(area: str, path: Path) -> list[Any]:
    spec = importlib.util.spec_from_file_location(f"bench_{area}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.bench())


def _ratio(value: float | None, before: Any) -> str:
    if value is None or not isinstance(before, int | float) or before <= 0:
        return ""
    return f"{value / before:.2f}x"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--save-baseline", action="store_true", help=f"write the figures to {BASELINE.name}")
    parser.add_argument("--only", default="", help="comma-separated areas (file names without bench_)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    from tests.benchkit import Figure

    before: dict[str, Any] = {}
    if BASELINE.is_file():
        before = json.loads(BASELINE.read_text()).get("figures", {})
    wanted = {a.strip() for a in args.only.split(",") if a.strip()}
    table = Table(title=f"marathon bench ({platform.node()}, ratio to {BASELINE.name} when saved)")
    for column in ("area", "figure", "measured", "target", "pass", "ratio"):
        table.add_column(column)
    measured: dict[str, float] = {}
    failures = errors = 0
    began = time.perf_counter()
    speed_before = _loop_seconds()
    for path in sorted(HERE.glob("bench_*.py")):
        area = path.stem.removeprefix("bench_")
        if wanted and area not in wanted:
            continue
        started = time.perf_counter()
        try:
            rows = _rows(area, path)
        except Exception as exc:  # a broken bench is reported as a row; the others still run
            errors += 1
            table.add_row(area, "error", f"{type(exc).__name__}: {str(exc)[:300]}", "", "ERROR", "")
            continue
        for row in rows:
            if isinstance(row, Figure):
                key = f"{area}: {row.name}"
                verdict = {None: "", True: "pass", False: "FAIL"}[row.passed]
                failures += row.passed is False
                if row.value is not None:
                    measured[key] = row.value
                ratio = _ratio(row.value, before.get(key))
                table.add_row(area, row.name, row.measured, row.target, verdict, ratio)
            else:
                name, value, target = row
                table.add_row(area, name, value, target, "", "")
        print(f"bench {area}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    speed_after = _loop_seconds()
    key, speed = "machine: empty Python loop", max(speed_before, speed_after)
    measured[key] = speed
    shown = f"{speed_before:.2f} s before the figures, {speed_after:.2f} s after ({LOOP_STEPS:,} steps)"
    table.add_row("machine", "empty Python loop", shown, "", "", _ratio(speed, before.get(key)))
    # Piped into a file or CI log, keep the table wide enough to read rather than 80 columns.
    Console(width=None if sys.stdout.isatty() else 180).print(table)
    print(f"bench: {time.perf_counter() - began:.0f} s; {failures} figures over their limit, {errors} errors")
    if args.save_baseline:
        saved_at = time.strftime("%Y-%m-%dT%H:%M:%S")
        document = {"host": platform.node(), "saved_at": saved_at, "figures": measured}
        BASELINE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        print(f"bench: figures saved to {BASELINE}")
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
