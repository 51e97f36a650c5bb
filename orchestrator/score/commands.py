"""``marathon score`` and ``marathon report``: verify bundles, find their no-action baselines, score them,
print or write the result (HTML, CSV and SVG).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.seal import is_sealed
from orchestrator.bundle.verify import read_verified_bundle
from orchestrator.errors import BundleError, ConfigError, Problem
from orchestrator.score.aggregate import summarise
from orchestrator.score.aggregate_report import (
    SeedRun,
    aggregate_charts,
    check_same_setup,
    figures_csv,
    kinds_csv,
    render_aggregate,
    seeds_csv,
)
from orchestrator.score.baselines import (
    baseline_mismatch,
    find_baseline,
    noop_command,
    on_real_cluster,
    search_roots,
)
from orchestrator.score.breakdown import by_category, by_mechanism, faults_csv, groups_csv
from orchestrator.score.provenance import Provenance, end_of, gather_provenance
from orchestrator.score.report import render_report, report_charts
from orchestrator.score.scorecard import Scorecard, score_bundle, scorecard_json
from orchestrator.score.table import render_text

REPORT_HTML = "report.html"
RUNS_DEFAULT = Path("runs")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        type=Path,
        metavar="DIR",
        default=RUNS_DEFAULT,
        help="a runs root whose .baselines/ is searched for the no-action baseline when --baseline is not "
        "given, after the runs root the bundle's run directory is in (default: %(default)s)",
    )
    parser.add_argument(
        "--no-verify",
        action="store_true",
        help="score a bundle even if it does not verify or is not sealed; the result then says so "
        "(default: refuse it)",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    score = subparsers.add_parser(
        "score",
        help="score a run bundle (docs/metrics.md)",
        description="Verify a run bundle, find its no-action baseline and print its score.",
    )
    score.add_argument("bundle", type=Path, help="a sealed run bundle, e.g. runs/<run id>/bundle")
    score.add_argument(
        "--baseline",
        type=Path,
        metavar="PATH",
        help="the no-action bundle of the same app, seed and schedule (default: the run's own, found "
        "among the cached baselines; without one the degradation level is -)",
    )
    score.add_argument(
        "--json", action="store_true", help="print the docs/metrics.md JSON document (default: tables)"
    )
    _common(score)
    score.set_defaults(func=_score)

    report = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a run bundle",
        description="One bundle: a report of the run with its provenance. Several bundles of one app and "
        "agent over seeds: the mean and 95 % confidence interval of every figure.",
    )
    report.add_argument(
        "bundles", type=Path, nargs="+", metavar="BUNDLE", help="one run bundle, or several over seeds"
    )
    report.add_argument(
        "--baseline",
        type=Path,
        metavar="PATH",
        help="the no-action bundle of the same app, seed and schedule, with one BUNDLE only (default: the "
        "run's own, found among the cached baselines)",
    )
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="PATH",
        default=Path(REPORT_HTML),
        help="an .html file to write, or a directory that receives report.html, every table as CSV and "
        "every chart as SVG (default: %(default)s)",
    )
    report.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="also write the per-fault table (with several bundles: the per-seed table) as CSV "
        "(default: none)",
    )
    _common(report)
    report.set_defaults(func=_report)


def _note(message: str) -> None:
    print(f"marathon: {message}", file=sys.stderr)


def _load(path: Path, *, no_verify: bool) -> Bundle:
    """The bundle, refused unless it is sealed and verifies (or ``--no-verify`` was given)."""
    if no_verify:
        return read_bundle(path)
    if not is_sealed(path):
        raise BundleError(
            f"{path}: not scored, the bundle is not sealed and so cannot be verified "
            f"(marathon bundle seal {path} seals it; --no-verify scores it as it is)"
        )
    try:
        return read_verified_bundle(path)
    except BundleError as exc:
        raise BundleError(f"{exc}; --no-verify scores it anyway") from None


def _baseline(bundle: Bundle, args: argparse.Namespace, given: Path | None) -> Bundle | None:
    if given is not None:
        baseline = _load(given, no_verify=args.no_verify)
        mismatch = baseline_mismatch(bundle.manifest, baseline.manifest)
        if mismatch is not None:
            _note(f"warning: {given} is not this run's own no-action baseline ({mismatch})")
        return baseline
    end, complete = end_of(bundle)
    if not complete:
        # As the run itself does: a run cut short is not comparable with a whole no-action run.
        _note(
            f"{bundle.path}: the run did not complete ({end}), so it has no baseline and no degradation level"
        )
        return None
    roots = search_roots(bundle.path, args.runs)
    search = find_baseline(bundle.manifest, roots=roots)
    if search.found is not None:
        if search.code_differs:
            _note(
                f"warning: degradation level against the no-action baseline {search.found}, "
                f"{search.code_differs}"
            )
        else:
            _note(f"degradation level against the no-action baseline {search.found}")
        return read_verified_bundle(search.found)
    if on_real_cluster(bundle.manifest):
        _note(f"{bundle.path}: {search.reason}, so the degradation level is -; --baseline PATH gives one")
        return None
    where = ", ".join(str(p) for p in search.searched)
    _note(
        f"{bundle.path}: no no-action baseline in {where} ({search.reason}), so the degradation level is -; "
        f"make it with: {noop_command(bundle.manifest, runs=roots[0])}  (or give --baseline PATH)"
    )
    return None


def _scored(bundle: Bundle, args: argparse.Namespace, given: Path | None) -> SeedRun:
    baseline = _baseline(bundle, args, given)
    card = score_bundle(bundle, baseline)
    return SeedRun(bundle, baseline, card, gather_provenance(bundle, baseline, no_verify=args.no_verify))


def _caveats(bundle: Bundle, provenance: Provenance | None) -> list[str]:
    lines: list[str] = []
    end, complete = end_of(bundle)
    if not complete:
        lines.append(f"RUN NOT COMPLETE ({end}): not comparable with complete runs")
    if provenance is not None:
        lines.append(f"NOT VERIFIED (--no-verify): {provenance.integrity}")
    return lines


def _score(args: argparse.Namespace) -> int:
    run = _scored(_load(args.bundle, no_verify=args.no_verify), args, args.baseline)
    bundle, card = run.bundle, run.card
    caveats = _caveats(bundle, run.provenance if args.no_verify else None)
    if args.json:
        for line in caveats:
            _note(line)
        sys.stdout.write(scorecard_json(card))
    else:
        sys.stdout.write("".join(f"{line}\n" for line in caveats))
        sys.stdout.write(render_text(card, title=f"{bundle.manifest.run_id} ({bundle.manifest.agent_name})"))
    return 0


def _svg_file(svg: str) -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{svg}\n'


def _write(output: Path, html: str, tables: Mapping[str, str], charts: Mapping[str, str]) -> list[Path]:
    """``output`` as one HTML file, or, when it is no ``.html`` name, a directory of every export."""
    if output.suffix.lower() in (".html", ".htm"):
        output.write_text(html, encoding="utf-8")
        return [output]
    if output.exists() and not output.is_dir():
        raise ConfigError(
            "invalid output", [Problem("-o", None, "", str(output), "neither an .html name nor a directory")]
        )
    output.mkdir(parents=True, exist_ok=True)
    files = {REPORT_HTML: html, **{f"{name}.csv": text for name, text in tables.items()}}
    files.update({f"{name}.svg": _svg_file(svg) for name, svg in charts.items()})
    written = []
    for name, text in files.items():
        (output / name).write_text(text, encoding="utf-8")
        written.append(output / name)
    return written


def _report(args: argparse.Namespace) -> int:
    if args.baseline is not None and len(args.bundles) > 1:
        raise ConfigError(
            "invalid arguments",
            [Problem("--baseline", None, "", str(args.baseline), "goes with one BUNDLE only")],
        )
    bundles = [_load(path, no_verify=args.no_verify) for path in args.bundles]
    check_same_setup(bundles)
    runs = [_scored(bundle, args, args.baseline) for bundle in bundles]
    if len(runs) == 1:
        run = runs[0]
        card: Scorecard = run.card
        html = render_report(run.bundle, run.baseline, card, provenance=run.provenance)
        tables = {
            "faults": faults_csv(card.outcomes),
            "categories": groups_csv("category", by_category(card.outcomes)),
            "mechanisms": groups_csv("mechanism", by_mechanism(card.outcomes)),
        }
        charts = report_charts(run.bundle, run.baseline, card)
    else:
        cards = [r.card for r in runs]
        html = render_aggregate(runs)
        tables = {
            "seeds": seeds_csv(runs),
            "figures": figures_csv(summarise(cards)),
            "kinds": kinds_csv(cards),
        }
        charts = aggregate_charts(runs)
    written = _write(args.output, html, tables, charts)
    if args.csv is not None:
        args.csv.write_text(next(iter(tables.values())), encoding="utf-8")
        written.append(args.csv)
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0
