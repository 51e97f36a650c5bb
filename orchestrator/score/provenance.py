"""Where a scored result comes from: the facts a paper's table needs beside the figures (run, versions,
hashes, how the run ended, whether the bundle verified, which baseline the degradation level used).

``gather_provenance`` reads them from the bundle's files; everything else here is pure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from orchestrator import __version__
from orchestrator.bundle.journal import RUNTIME_FILE
from orchestrator.bundle.reader import Bundle, payload_dir
from orchestrator.bundle.seal import TAG_MANIFEST, is_sealed
from orchestrator.bundle.verify import verify_bundle

COMPLETED = "completed"


@dataclass(frozen=True)
class Provenance:
    """The provenance block of a report (every value already a display string, except the flags)."""

    run_id: str
    app: str
    seed: int
    agent: str
    run_date: str
    code: str
    report_code: str
    catalog: str
    rule_pack: str
    delta_s: float
    budget_s: float
    end: str  # the run_ended reason, or what is missing
    complete: bool
    bundle_sha256: str  # of the tag manifest, which covers every file of the bag
    integrity: str  # what verification found, whether or not it was required before scoring
    verified: bool
    no_verify: bool
    baseline: str
    sandboxed: bool

    @property
    def stated_integrity(self) -> str:
        if self.no_verify:
            return f"NOT CHECKED BEFORE SCORING (--no-verify); {self.integrity}"
        return self.integrity

    def rows(self) -> list[tuple[str, str]]:
        """The block as (name, value) rows, in reading order (no side effects)."""
        return [
            ("Run", self.run_id),
            ("App / seed / agent", f"{self.app} / {self.seed} / {self.agent}"),
            ("Run date", self.run_date),
            ("Status", self.end if self.complete else f"{self.end.upper()}: NOT A COMPLETE RUN"),
            ("Marathon version (run)", self.code),
            ("Marathon version (report)", self.report_code),
            ("Rule pack", self.rule_pack),
            ("Catalog", self.catalog),
            ("Delta / budget", f"{self.delta_s:g} s / {self.budget_s:g} s"),
            ("Bundle SHA-256", self.bundle_sha256),
            ("Integrity", self.stated_integrity),
            ("No-action baseline", self.baseline),
            ("Agent sandbox", "bwrap" if self.sandboxed else "NONE (--unsandboxed): not comparable"),
        ]


def end_of(bundle: Bundle) -> tuple[str, bool]:
    """How the run ended, and whether it ran its whole schedule (no side effects)."""
    if bundle.ended is None:
        return "partial (no run_ended record)", False
    return bundle.ended.reason, bundle.ended.reason == COMPLETED


def bundle_sha256(path: Path) -> str:
    """SHA-256 of the bag's tag manifest: it lists the digest of every file, so it names the whole bundle."""
    tags = Path(path) / TAG_MANIFEST
    return hashlib.sha256(tags.read_bytes()).hexdigest() if tags.is_file() else "- (not sealed)"


def integrity_of(path: Path) -> tuple[str, bool]:
    if not is_sealed(path):
        return "NOT SEALED: cannot be verified", False
    verification = verify_bundle(path)
    if not verification.ok:
        # A finding that names a file says more than the bag's byte count does.
        first = next((f for f in verification.findings if f.subject != "bag"), verification.findings[0])
        return f"DOES NOT VERIFY ({len(verification.findings)} problems; first {first})", False
    signature = ", signature ok" if verification.signed else ", unsigned"
    return f"verified: manifests and hash chains intact{signature}", True


def _run_date(path: Path) -> str:
    runtime = payload_dir(path) / RUNTIME_FILE
    try:
        started = json.loads(runtime.read_text(encoding="utf-8")).get("started_at")
    except (OSError, ValueError, AttributeError):
        started = None
    if isinstance(started, str) and started:
        return started
    info = Path(path) / "bag-info.txt"
    if info.is_file():
        for line in info.read_text(encoding="utf-8").splitlines():
            if line.startswith("Bagging-Date:"):
                return f"{line.split(':', 1)[1].strip()} (sealed)"
    return "-"


def gather_provenance(bundle: Bundle, baseline: Bundle | None, *, no_verify: bool = False) -> Provenance:
    """The provenance of ``bundle`` scored against ``baseline``; verifies the bundle to say if it does."""
    manifest = bundle.manifest
    end, complete = end_of(bundle)
    integrity, verified = integrity_of(bundle.path)
    if baseline is None:
        said_baseline = "none: degradation level -"
    else:
        digest = bundle_sha256(baseline.path)
        said_baseline = f"{baseline.manifest.run_id} ({baseline.path}, SHA-256 {digest})"
        if baseline.manifest.code_sha256 != manifest.code_sha256:
            said_baseline += f"; made by other code (SHA-256 {baseline.manifest.code_sha256})"
    return Provenance(
        run_id=manifest.run_id,
        app=manifest.app,
        seed=manifest.seed,
        agent=manifest.agent_name,
        run_date=_run_date(bundle.path),
        code=f"{manifest.code_version} (code SHA-256 {manifest.code_sha256})",
        report_code=__version__,
        catalog=f"{manifest.catalog_version} (SHA-256 {manifest.catalog_sha256})",
        rule_pack=f"{manifest.rule_pack_version} (SHA-256 {manifest.rule_pack_sha256})",
        delta_s=manifest.delta_s,
        budget_s=manifest.budget_s,
        end=end,
        complete=complete,
        bundle_sha256=bundle_sha256(bundle.path),
        integrity=integrity,
        verified=verified,
        no_verify=no_verify,
        baseline=said_baseline,
        sandboxed=manifest.sandboxed,
    )
