"""Unpacking a downloaded bundle and checking that no fault outlived its run."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import zstandard

from orchestrator.bundle.reader import read_bundle
from orchestrator.mechanisms import ledger


def unpack(data: bytes, into: Path) -> Path:
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        tar.extractall(into, filter="data")
    (bundle,) = [p for p in into.iterdir() if p.is_dir()]
    return bundle


def unreverted(bundle: Path) -> list[str]:
    """Faults the bundle shows injected (and not failed) with no settling revert."""
    loaded = read_bundle(bundle)
    failed = {f.fault_id for f in loaded.failed}
    settled = {r.fault_id for r in loaded.reverted if r.outcome in ("reverted", "already_restored")}
    return [f.fault_id for f in loaded.injected if f.fault_id not in failed and f.fault_id not in settled]


def pending_in_ledger(path: Path) -> list[str]:
    _target, pending = ledger.read(path)
    return [h.fault_id for h in pending]
