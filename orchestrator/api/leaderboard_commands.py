"""``marathon leaderboard``: the leaderboard of the run registry, or of sealed bundles scored on the spot,
as a table (or JSON). The statistics are ``orchestrator.api.leaderboard``'s, the ones ``GET /leaderboard``
serves."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.api.commands import add_registry_arguments, db_url
from orchestrator.errors import ConfigError, Problem

if TYPE_CHECKING:
    from orchestrator.api.leaderboard import Result
    from orchestrator.api.models import Leaderboard

# The end reasons a runner writes in ``run_ended``, as the registry's statuses.
_STATUS_OF_REASON = {"completed": "finished", "error": "failed"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    board = subparsers.add_parser(
        "leaderboard",
        help="mean score and its 95 percent CI per app and agent over seeds, from the registry or bundles",
        description="Per app x agent: the seeds counted (the latest completed run of each), the mean "
        "marathon score with the half-width of its 95% Student t interval (none with one seed) and the "
        "consistency (mean over fault kinds of the share of seeds that resolved the kind end to end). "
        "Stopped, failed, interrupted and partial runs are counted apart, never averaged.",
    )
    board.add_argument(
        "--bundles", nargs="+", type=Path, metavar="BUNDLE", default=None,
        help="score these sealed bundles (each must verify) instead of reading the registry "
        "(default: read the registry)",
    )  # fmt: skip
    board.add_argument(
        "--json", action="store_true", help="print the GET /leaderboard JSON document (default: a table)"
    )
    add_registry_arguments(board)
    board.set_defaults(func=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    from orchestrator.api.leaderboard import leaderboard

    results = _from_bundles(args.bundles) if args.bundles else _from_registry(args)
    board = leaderboard(results)
    if args.json:
        print(json.dumps(board.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_table(board))
    return 0


def _from_registry(args: argparse.Namespace) -> list[Result]:
    from orchestrator.api.leaderboard import result_of_row
    from orchestrator.api.registry import Registry

    if not args.db:
        registry_file = args.data / "registry.sqlite"
        if not registry_file.is_file():  # reading a leaderboard creates no registry
            why = f"no run registry at {registry_file}; give --data, --db or --bundles"
            problem = Problem("command line", None, "--data", str(args.data), why)
            raise ConfigError("no leaderboard", [problem])
    return [result_of_row(row) for row in Registry(db_url(args)).ended()]


def _from_bundles(paths: list[Path]) -> list[Result]:
    from orchestrator.api.leaderboard import Result
    from orchestrator.bundle.journal import RUNTIME_FILE
    from orchestrator.bundle.verify import read_verified_bundle
    from orchestrator.score.scorecard import score_bundle, scorecard_json

    results = []
    for index, path in enumerate(paths):
        bundle = read_verified_bundle(path)
        reason = bundle.ended.reason if bundle.ended is not None else None
        status = "partial"  # a journal never sealed or never closed: the run did not end
        if bundle.sealed and reason is not None:
            status = _STATUS_OF_REASON.get(reason, reason)
        score = None
        if status == "finished":
            score = json.loads(scorecard_json(score_bundle(bundle)))
        started = _started_at(path / "data" / RUNTIME_FILE if bundle.sealed else path / RUNTIME_FILE)
        manifest = bundle.manifest
        results.append(
            Result(
                run_id=manifest.run_id,
                app=manifest.app,
                agent=manifest.agent_name,
                seed=manifest.seed,
                status=status,
                reason=reason,
                score=score,
                order=(started, index),
                created_at=started,
                link=str(path),
                report=None,
            )
        )
    return results


def _started_at(runtime: Path) -> str:
    """When the run started, from its runtime file ('' when it has none): which of a seed's runs is latest."""
    try:
        started = json.loads(runtime.read_text(encoding="utf-8")).get("started_at", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return started if isinstance(started, str) else ""


def render_table(board: Leaderboard) -> str:
    """The leaderboard as aligned text: one line per app x agent, then one per kind of incomplete run."""
    header = ("app", "agent", "n", "seeds", "mean ± 95% CI", "consistency")
    lines: list[tuple[str, ...]] = [header]
    for row in board.rows:
        spread = f"{row.ci95.half_width:5.1f}" if row.ci95 is not None else "  n/a"
        kinds = f"{len(row.kinds)} kind{'s' if len(row.kinds) != 1 else ''}"
        consistency = "-" if row.consistency is None else f"{row.consistency:.2f} ({kinds})"
        lines.append(
            (row.app, row.agent, str(row.n), ",".join(map(str, row.seeds)), f"{row.mean:5.1f} ± {spread}",
             consistency)
        )  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
           for line in lines]  # fmt: skip
    if not board.rows:
        out.append("(no completed run)")
    out.append("")
    out.append("n: seeds counted, the latest completed run of each; CI: half-width of the 95% Student t")
    out.append("interval over seeds (n/a with one seed); consistency: mean over fault kinds of the share of")
    out.append("seeds in which every fault of the kind was handled end to end")
    counts = Counter(run.status for run in board.incomplete)
    if not counts:
        out.append("incomplete runs: none")
    for status, count in sorted(counts.items()):
        out.append(f"incomplete, {status}: {count} run{'s' if count != 1 else ''} (in no mean)")
    return "\n".join(out) + "\n"
