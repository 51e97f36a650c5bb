"""``make bench``: runs every ``tests/bench_*.py`` module's ``bench()`` and prints one table of figures.

Performance targets live here, never in tests: each row is (what, measured, target).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main() -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent))
    table = Table(title="marathon bench")
    for column in ("area", "measure", "measured", "target"):
        table.add_column(column)
    failures = 0
    for path in sorted(here.glob("bench_*.py")):
        area = path.stem.removeprefix("bench_")
        spec = importlib.util.spec_from_file_location(f"bench_{area}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        started = time.perf_counter()
        try:
            spec.loader.exec_module(module)
            rows = module.bench()
        except Exception as exc:  # a broken bench is reported as a row; the others still run
            failures += 1
            table.add_row(area, "error", f"{type(exc).__name__}: {exc}", "")
            continue
        for name, measured, target in rows:
            table.add_row(area, name, measured, target)
        print(f"bench {area}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    # Piped into a file or CI log, keep the table wide enough to read rather than 80 columns.
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
