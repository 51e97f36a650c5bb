"""``marathon score`` and ``marathon report``: read bundles, score them, print or write the result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.bundle.verify import read_verified_bundle
from orchestrator.score.report import render_report
from orchestrator.score.scorecard import score_bundle, scorecard_json
from orchestrator.score.table import render_text


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    score = subparsers.add_parser("score", help="score a run bundle (docs/metrics.md)")
    score.add_argument("bundle", type=Path)
    score.add_argument("--baseline", type=Path, help="no-action bundle of the same app and seed")
    score.add_argument("--json", action="store_true", help="print the docs/metrics.md JSON document")
    score.set_defaults(func=_score)

    report = subparsers.add_parser("report", help="write a self-contained HTML report of a run bundle")
    report.add_argument("bundle", type=Path)
    report.add_argument("--baseline", type=Path, help="no-action bundle of the same app and seed")
    report.add_argument("-o", "--output", type=Path, default=Path("report.html"))
    report.set_defaults(func=_report)


def _score(args: argparse.Namespace) -> int:
    bundle = read_verified_bundle(args.bundle)
    baseline = read_verified_bundle(args.baseline) if args.baseline else None
    card = score_bundle(bundle, baseline)
    if args.json:
        sys.stdout.write(scorecard_json(card))
    else:
        sys.stdout.write(render_text(card, title=f"{bundle.manifest.run_id} ({bundle.manifest.agent_name})"))
    return 0


def _report(args: argparse.Namespace) -> int:
    bundle = read_verified_bundle(args.bundle)
    baseline = read_verified_bundle(args.baseline) if args.baseline else None
    html = render_report(bundle, baseline, score_bundle(bundle, baseline))
    args.output.write_text(html, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0
