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
        extract(tar, into)
    (bundle,) = [p for p in into.iterdir() if p.is_dir()]
    return bundle


def extract(archive: tarfile.TarFile, into: Path) -> None:
    """Unpack a bundle archive, which holds nothing but folders and regular files under ``into``: checked
    member by member, so that interpreters older than tarfile's extraction filters (3.11.4) check it too,
    and with the ``data`` filter where there is one."""
    root = into.resolve()
    for member in archive.getmembers():
        assert member.isdir() or member.isfile(), f"{member.name}: not a folder or a regular file"
        assert (root / member.name).resolve().is_relative_to(root), f"{member.name}: outside the archive"
    if hasattr(tarfile, "data_filter"):
        archive.extractall(into, filter="data")
    else:
        archive.extractall(into)


def unreverted(bundle: Path) -> list[str]:
    """Faults the bundle shows injected (and not failed) with no settling revert."""
    loaded = read_bundle(bundle)
    failed = {f.fault_id for f in loaded.failed}
    settled = {r.fault_id for r in loaded.reverted if r.outcome in ("reverted", "already_restored")}
    return [f.fault_id for f in loaded.injected if f.fault_id not in failed and f.fault_id not in settled]


def pending_in_ledger(path: Path) -> list[str]:
    _target, pending = ledger.read(path)
    return [h.fault_id for h in pending]
