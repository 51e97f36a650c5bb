"""Verification of a sealed bundle: BagIt manifests, tag files, per-stream hash chains, the signature, and
that the rule-health summary agrees with the failed rule evaluations journaled before it.

Every check runs and every defect is reported as a ``Finding`` naming the file (and line) at fault, so a
tampered bundle says what was changed rather than only that something was.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bagit
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from orchestrator.bundle.journal import PREV_KEY, STREAM_SUFFIX, genesis_hash, scan_stream
from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.records import RECORD_ADAPTER, Record, RuleFailed, RuleHealth, ServiceStates
from orchestrator.bundle.seal import (
    CHAIN_HEADS_FILE,
    PUBLIC_KEY_FILE,
    SIGNATURE_FILE,
    TAG_MANIFEST,
    is_sealed,
    read_manifest,
)
from orchestrator.errors import BundleError

_TAG_LINE = re.compile(r"^(?P<digest>[0-9a-f]{64}) (?P<name>[^\s]+)$")


@dataclass(frozen=True)
class Finding:
    subject: str
    problem: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.problem}"


@dataclass(frozen=True)
class Verification:
    bundle: Path
    findings: tuple[Finding, ...]
    records: int
    signed: bool
    unhealthy_rules: tuple[RuleHealth, ...] = ()  # rules some of whose evaluations failed (a fact of the run)

    @property
    def ok(self) -> bool:
        return not self.findings


def verify_bundle(bundle: Path, *, public_key: Path | None = None) -> Verification:
    """Check everything that can be checked about ``bundle``; never raises for a defective bundle."""
    bundle = Path(bundle)
    if not bundle.is_dir() or not is_sealed(bundle):
        finding = Finding(str(bundle), "not a sealed bundle (no bagit.txt)")
        return Verification(bundle=bundle, findings=(finding,), records=0, signed=False)
    findings = _check_tag_manifest(bundle)
    findings += _check_bag(bundle)
    chain_findings, records = _check_chains(bundle)
    findings += chain_findings
    signature_findings, signed = _check_signature(bundle, public_key)
    findings += signature_findings
    rule_findings, unhealthy = _check_rule_health(bundle)
    findings += rule_findings
    findings += _check_service_states(bundle)
    unique = tuple(dict.fromkeys(findings))
    return Verification(
        bundle=bundle, findings=unique, records=records, signed=signed, unhealthy_rules=unhealthy
    )


def read_verified_bundle(path: Path) -> Bundle:
    """``read_bundle``, but a sealed bundle only if it verifies: a score of an altered or cut record would
    look like a result. An unsealed journal directory (a run still under way) is read as it is."""
    if is_sealed(path):
        verification = verify_bundle(path)
        if not verification.ok:
            raise BundleError(
                f"{path}: not scored, the bundle does not verify ({len(verification.findings)} problems; "
                f"first {verification.findings[0]}); marathon bundle verify {path} lists them"
            )
    return read_bundle(path)


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_tag_manifest(bundle: Path) -> list[Finding]:
    # Checked here rather than only by bagit: bagit skips tag manifests when bagit.txt claims an old version.
    path = bundle / TAG_MANIFEST
    if not path.is_file():
        return [Finding(TAG_MANIFEST, "missing")]
    findings: list[Finding] = []
    listed: set[str] = set()
    text = path.read_bytes().decode("utf-8", "replace")
    if not text.endswith("\n"):
        findings.append(Finding(TAG_MANIFEST, "does not end with a newline"))
    # Strict on purpose: the sealer writes exactly this form, so any other byte is a change.
    for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1):
        entry = _TAG_LINE.match(line)
        if entry is None:
            findings.append(Finding(TAG_MANIFEST, f"line {number} is malformed: {line!r}"))
            continue
        digest, name = entry.group("digest"), entry.group("name")
        listed.add(name)
        target = bundle / name
        if not target.is_file():
            findings.append(Finding(name, f"listed in {TAG_MANIFEST} but missing"))
        elif _sha256_file(target) != digest:
            findings.append(Finding(name, f"tag file changed (SHA-256 differs from {TAG_MANIFEST})"))
    for other in sorted(p for p in bundle.rglob("*") if p.is_file()):
        name = other.relative_to(bundle).as_posix()
        if name.startswith(("data/", "tagmanifest-")) or name in listed:
            continue
        findings.append(Finding(name, f"extra tag file not listed in {TAG_MANIFEST}"))
    return findings


def _check_bag(bundle: Path) -> list[Finding]:
    try:
        bag: Any = bagit.Bag(str(bundle))
    except Exception as exc:  # noqa: BLE001 - any failure to parse the bag is a finding, not a crash
        return [Finding("bag", f"unreadable by bagit: {exc}")]
    findings: list[Finding] = []
    # bagit also logs each bad checksum; every one is a finding here, so its log would only repeat them.
    bagit_log = logging.getLogger("bagit")
    level = bagit_log.level
    bagit_log.setLevel(logging.CRITICAL)
    try:
        # Each stage runs on its own so that a failing byte count does not hide which file is at fault.
        for stage in (bag._validate_structure, bag._validate_oxum, bag._validate_completeness):
            findings += _bagit_findings(stage)
        findings += _bagit_findings(lambda: bag._validate_entries(1))
    finally:
        bagit_log.setLevel(level)
    return findings


def _bagit_findings(stage: Any) -> list[Finding]:
    try:
        stage()
    except bagit.BagValidationError as exc:
        if not exc.details:
            return [Finding("bag", str(exc.message))]
        return [_detail_finding(detail) for detail in exc.details]
    except Exception as exc:  # noqa: BLE001 - a malformed manifest or bag-info must not crash verification
        return [Finding("bag", f"validation error: {exc}")]
    return []


def _detail_finding(detail: Any) -> Finding:
    path = str(getattr(detail, "path", "bag"))
    if isinstance(detail, bagit.ChecksumMismatch):
        return Finding(path, "content changed (SHA-256 differs from the manifest)")
    if isinstance(detail, bagit.FileMissing):
        return Finding(path, "listed in the manifest but missing")
    if isinstance(detail, bagit.UnexpectedFile):
        return Finding(path, "extra file not listed in the manifest")
    return Finding(path, str(detail))


def _check_chains(bundle: Path) -> tuple[list[Finding], int]:
    data = bundle / "data"
    try:
        run_id = read_manifest(data).run_id
    except BundleError as exc:
        return [Finding("data/run.jsonl", f"cannot read the run manifest: {exc}")], 0
    try:
        heads = json.loads((bundle / CHAIN_HEADS_FILE).read_text(encoding="utf-8"))
        if not isinstance(heads, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        return [Finding(CHAIN_HEADS_FILE, f"unreadable: {exc}")], 0
    findings: list[Finding] = []
    records = 0
    names = sorted({*heads, *(p.name for p in data.glob(f"*{STREAM_SUFFIX}"))})
    for name in names:
        subject = f"data/{name}"
        sealed = heads.get(name)
        path = data / name
        if sealed is None:
            findings.append(Finding(subject, f"stream not recorded in {CHAIN_HEADS_FILE}"))
            continue
        if not path.is_file():
            findings.append(Finding(subject, "stream missing"))
            continue
        scan = scan_stream(path, genesis=genesis_hash(run_id))
        records += len(scan.lines)
        findings += [Finding(subject, problem) for problem in scan.problems]
        if scan.partial_tail:
            findings.append(Finding(subject, "ends with an unterminated line (bytes appended or cut)"))
        findings += _head_findings(subject, scan.lines, scan.head, sealed)
    return findings, records


def _head_findings(subject: str, lines: list[bytes], head: str, sealed: Any) -> list[Finding]:
    try:
        count, sealed_head = int(sealed["records"]), str(sealed["head"])
    except (KeyError, TypeError, ValueError):
        return [Finding(CHAIN_HEADS_FILE, f"entry for {subject} is malformed")]
    if len(lines) < count:
        return [Finding(subject, f"{len(lines)} records but {count} were sealed (records deleted)")]
    if len(lines) > count:
        return [Finding(subject, f"{len(lines)} records but {count} were sealed (records appended)")]
    if head != sealed_head:
        return [Finding(subject, f"line {count}: last record differs from the sealed chain head (altered)")]
    return []


def _stream_records(
    path: Path, subject: str, what: str, findings: list[Finding]
) -> Iterator[tuple[int, Record]]:
    """Each complete line of a stream as a record with its line number; a line that is not a record is a
    finding, and the torn tail of an unsealed stream is left out."""
    *complete, _tail = path.read_bytes().split(b"\n")
    for number, line in enumerate(complete, start=1):
        try:
            body = json.loads(line)
            body.pop(PREV_KEY, None)
            record = RECORD_ADAPTER.validate_python(body)
        except (ValueError, AttributeError) as exc:
            findings.append(Finding(subject, f"line {number}: not a {what} record: {exc}"))
            continue
        yield number, record


def _check_rule_health(bundle: Path) -> tuple[list[Finding], tuple[RuleHealth, ...]]:
    """The rules stream holds rule records only; once its end-of-run summary is written, nothing follows it,
    each rule appears in it once, and each rule's failures are the ``rule_failed`` records it has."""
    subject = f"data/rules{STREAM_SUFFIX}"
    path = bundle / subject
    if not path.is_file():
        return [], ()
    findings: list[Finding] = []
    failed: Counter[str] = Counter()
    health: dict[str, RuleHealth] = {}
    for number, record in _stream_records(path, subject, "rule", findings):
        if isinstance(record, RuleFailed):
            if health:
                findings.append(Finding(subject, f"line {number}: a failed evaluation after the summary"))
            failed[record.rule] += 1
        elif isinstance(record, RuleHealth):
            if record.rule in health:
                findings.append(Finding(subject, f"line {number}: rule {record.rule!r} summarised twice"))
            health[record.rule] = record
        else:
            findings.append(Finding(subject, f"line {number}: a {record.kind} record in the rules stream"))
    if health:
        for rule in sorted(failed.keys() - health.keys()):
            findings.append(Finding(subject, f"rule {rule!r} failed but is missing from the summary"))
        for rule, summary in health.items():
            if summary.failures != failed[rule]:
                findings.append(
                    Finding(subject, f"rule {rule!r}: the summary counts {summary.failures} failed "
                                     f"evaluations, the stream holds {failed[rule]}")
                )  # fmt: skip
    return findings, tuple(summary for summary in health.values() if summary.failures)


def _check_service_states(bundle: Path) -> list[Finding]:
    """The state stream holds workload snapshots only: at most one of the run's start, then at most one of
    its end, so the collateral check compares exactly what the runner saw."""
    subject = f"data/state{STREAM_SUFFIX}"
    path = bundle / subject
    if not path.is_file():
        return []
    findings: list[Finding] = []
    seen: list[str] = []
    for number, record in _stream_records(path, subject, "service-state", findings):
        if not isinstance(record, ServiceStates):
            findings.append(Finding(subject, f"line {number}: a {record.kind} record in the state stream"))
        elif record.moment in seen:
            findings.append(Finding(subject, f"line {number}: a second {record.moment} snapshot"))
        elif record.moment == "start" and "end" in seen:
            findings.append(Finding(subject, f"line {number}: the start snapshot after the end one"))
        else:
            seen.append(record.moment)
    return findings


def _check_signature(bundle: Path, public_key: Path | None) -> tuple[list[Finding], bool]:
    signature_path = bundle / SIGNATURE_FILE
    if not signature_path.is_file():
        if public_key is not None:
            return [Finding(SIGNATURE_FILE, "missing, but a public key was given to check it")], False
        return [], False
    key_path = public_key if public_key is not None else bundle / PUBLIC_KEY_FILE
    try:
        key = serialization.load_pem_public_key(Path(key_path).read_bytes())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{type(key).__name__} is not an Ed25519 key")
    except (OSError, ValueError, TypeError, UnsupportedAlgorithm) as exc:
        return [Finding(str(key_path), f"public key unreadable: {exc}")], True
    raw = signature_path.read_bytes()
    try:
        signature = base64.b64decode(raw.removesuffix(b"\n"), validate=True)
        # Only the exact bytes the sealer writes are accepted, so no byte of the file can change unseen.
        if raw != base64.b64encode(signature) + b"\n":
            raise ValueError("not in canonical form")
        key.verify(signature, (bundle / TAG_MANIFEST).read_bytes())
    except (binascii.Error, ValueError, OSError, InvalidSignature):
        return [Finding(SIGNATURE_FILE, f"signature does not match {TAG_MANIFEST} and {key_path}")], True
    return [], True
