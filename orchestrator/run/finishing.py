"""After the loop: seal the journal into a bag, verify it, score it against the no-action baseline, and keep
the score beside the bundle (``score.json``, ``score.txt``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.seal import is_sealed, seal_bundle
from orchestrator.bundle.verify import verify_bundle
from orchestrator.errors import BundleError
from orchestrator.score.scorecard import score_bundle, scorecard_json
from orchestrator.score.table import render_text

BUNDLE_DIR = "bundle"
SCORE_JSON = "score.json"
SCORE_TEXT = "score.txt"


@dataclass(frozen=True)
class Scored:
    bundle: Path
    score: dict[str, Any]
    text: str


def seal(run_dir: Path) -> Path:
    """Seal the run's journal (once) and verify it; ``BundleError`` naming every finding otherwise."""
    bundle = run_dir / BUNDLE_DIR
    if not is_sealed(bundle):
        seal_bundle(bundle)
    verification = verify_bundle(bundle)
    if not verification.ok:
        findings = "\n  ".join(str(f) for f in verification.findings)
        raise BundleError(f"{bundle}: the sealed bundle does not verify:\n  {findings}")
    return bundle


def seal_and_score(run_dir: Path, *, scored: bool, baseline: Path | None) -> Scored:
    bundle = seal(run_dir)
    if not scored:
        return Scored(bundle=bundle, score={}, text="")
    loaded = read_bundle(bundle)
    card = score_bundle(loaded, read_bundle(baseline) if baseline is not None else None)
    document = scorecard_json(card)
    (run_dir / SCORE_JSON).write_text(document, encoding="utf-8")
    title = f"{loaded.manifest.run_id} ({loaded.manifest.agent_name})"
    text = render_text(card, title=title)
    (run_dir / SCORE_TEXT).write_text(text, encoding="utf-8")
    score: dict[str, Any] = json.loads(document)
    return Scored(bundle=bundle, score=score, text=text)
