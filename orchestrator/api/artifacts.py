"""What a finished run offers for download, made once and kept in the run's home: the packed bundle and
the HTML report.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import RunRow
from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.seal import is_sealed, pack_bundle
from orchestrator.errors import OrchestratorError
from orchestrator.run.config import RunConfig
from orchestrator.run.finishing import BUNDLE_DIR
from orchestrator.score.baselines import find_baseline, search_roots
from orchestrator.score.provenance import end_of
from orchestrator.score.report import render_report
from orchestrator.score.scorecard import score_bundle

PACKED = "bundle.tar.zst"
REPORT = "report.html"


def bundle_dir(row: RunRow) -> Path:
    bundle = row.home / RUN_DIR / BUNDLE_DIR
    if not is_sealed(bundle):
        raise FileNotFoundError(bundle)
    return bundle


def _write_once(path: Path, data: bytes) -> Path:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_bytes(data)
    os.replace(temporary, path)  # concurrent requests each write whole files; the last rename wins
    return path


def packed_bundle(row: RunRow) -> Path:
    target = row.home / PACKED
    if not target.is_file():
        scratch = row.home / f".pack-{os.getpid()}.tar.zst"
        pack_bundle(bundle_dir(row), scratch)
        os.replace(scratch, target)
    return target


def _baseline(row: RunRow, bundle: Bundle) -> Bundle | None:
    """The no-action baseline the run was scored against, found as ``marathon score`` finds it (by the
    run's manifest, under its runs root); None for a run that did not complete or has none cached."""
    config = RunConfig.model_validate(row.config)
    if not config.against_baseline or not end_of(bundle)[1]:
        return None
    search = find_baseline(bundle.manifest, roots=search_roots(bundle.path, config.runs_root))
    return read_bundle(search.found) if search.found is not None else None


def report_html(row: RunRow) -> Path:
    target = row.home / REPORT
    if not target.is_file():
        bundle = read_bundle(bundle_dir(row))
        baseline = _baseline(row, bundle)
        try:
            card = score_bundle(bundle, baseline)
        except OrchestratorError:
            baseline = None
            card = score_bundle(bundle, None)
        _write_once(target, render_report(bundle, baseline, card).encode("utf-8"))
    return target
