"""Sealing a finished journal into a BagIt bag (RFC 8493), optionally signed, and packing it into one file.

The bag holds the streams and the runtime file under ``data/``, SHA-256 payload and tag manifests, a
``bag-info.txt`` naming the run, and the tag file ``chain-heads.json`` (record count and last line hash of
every stream, so a record deleted from or appended to the end of a stream is detected). With a signing key,
``signature-ed25519.pub`` is added as a tag file and ``tagmanifest-sha256.txt.sig`` holds the detached
Ed25519 signature (base64) of the tag manifest's bytes.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
from pathlib import Path

import bagit
import zstandard
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from orchestrator.bundle.journal import STREAM_SUFFIX, canonical_json, genesis_hash, scan_stream
from orchestrator.bundle.records import RECORD_ADAPTER, RunManifest
from orchestrator.errors import BundleError, ConfigError

CHAIN_HEADS_FILE = "chain-heads.json"
PUBLIC_KEY_FILE = "signature-ed25519.pub"
TAG_MANIFEST = "tagmanifest-sha256.txt"
SIGNATURE_FILE = TAG_MANIFEST + ".sig"
RUN_STREAM = "run" + STREAM_SUFFIX


def is_sealed(bundle: Path) -> bool:
    return (Path(bundle) / "bagit.txt").is_file()


def read_manifest(directory: Path) -> RunManifest:
    """The run manifest, the first line of the run stream of an unsealed journal or a bag's payload."""
    path = directory / RUN_STREAM
    try:
        first = path.read_bytes().split(b"\n", 1)[0]
        body = json.loads(first)
        body.pop("prev", None)
        record = RECORD_ADAPTER.validate_python(body)
    except (OSError, ValueError, AttributeError) as exc:
        raise BundleError(f"{path}: line 1 is not a readable run_manifest: {exc}") from exc
    if not isinstance(record, RunManifest):
        raise BundleError(f"{path}: line 1: kind = {record.kind!r}, expected 'run_manifest'")
    return record


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(
            f"{path}: signing key is not a readable unencrypted PEM private key: {exc}"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{path}: signing key is a {type(key).__name__}, expected an Ed25519 private key")
    return key


def write_signing_key(path: Path) -> Ed25519PublicKey:
    """Create a new Ed25519 key as unencrypted PKCS#8 PEM at ``path``; returns its public half."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    Path(path).write_bytes(pem)
    Path(path).chmod(0o600)
    return key.public_key()


def seal_bundle(directory: Path, *, signing_key: Path | None = None, bagging_date: str | None = None) -> Path:
    """Turn a journal directory into a sealed bag in place; refuses a broken or cut-off journal.

    bagit changes the process's working directory while it bags, so seal from one thread at a time.
    """
    directory = Path(directory)
    if is_sealed(directory):
        raise BundleError(f"{directory}: already sealed (bagit.txt exists)")
    manifest = read_manifest(directory)
    key = load_signing_key(signing_key) if signing_key is not None else None
    heads = _chain_heads(directory, manifest.run_id)
    info = {
        "External-Identifier": manifest.run_id,
        "Run-Id": manifest.run_id,
        "App": manifest.app,
        "Namespace": manifest.namespace,
        "Seed": str(manifest.seed),
        "Agent": manifest.agent_name,
        "Catalog-Version": manifest.catalog_version,
        "Catalog-SHA256": manifest.catalog_sha256,
        "Rule-Pack-Version": manifest.rule_pack_version,
        "Rule-Pack-SHA256": manifest.rule_pack_sha256,
        "Code-Version": manifest.code_version,
        "Code-SHA256": manifest.code_sha256,
        "Journal-Schema-Version": str(manifest.v),
    }
    if bagging_date is not None:
        info["Bagging-Date"] = bagging_date
    try:
        bag = bagit.make_bag(str(directory), bag_info=info, checksums=["sha256"])
        (directory / CHAIN_HEADS_FILE).write_text(canonical_json(heads) + "\n", encoding="utf-8")
        if key is not None:
            public = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            (directory / PUBLIC_KEY_FILE).write_bytes(public)
        bag.save()  # rewrites the tag manifest so it covers the files just added
    except (bagit.BagError, OSError, RuntimeError) as exc:
        raise BundleError(f"{directory}: sealing failed: {exc}") from exc
    if key is not None:
        signature = key.sign((directory / TAG_MANIFEST).read_bytes())
        (directory / SIGNATURE_FILE).write_text(base64.b64encode(signature).decode("ascii") + "\n")
    return directory


def _chain_heads(directory: Path, run_id: str) -> dict[str, dict[str, int | str]]:
    heads: dict[str, dict[str, int | str]] = {}
    for path in sorted(directory.glob(f"*{STREAM_SUFFIX}")):
        scan = scan_stream(path, genesis=genesis_hash(run_id))
        if scan.problems:
            raise BundleError(f"{path}: cannot seal a broken hash chain: {scan.problems[0]}")
        if scan.partial_tail:
            raise BundleError(
                f"{path}: ends with an unterminated record; reopen the journal to recover it before sealing"
            )
        heads[path.name] = {"records": len(scan.lines), "head": scan.head}
    return heads


def pack_bundle(bundle: Path, output: Path) -> Path:
    """Write a sealed bundle as one ``.tar.zst`` or ``.tar.gz``, byte-identical for identical bundles."""
    bundle = Path(bundle)
    if not is_sealed(bundle):
        raise BundleError(f"{bundle}: not a sealed bundle (no bagit.txt); seal it before packing")
    name = output.name
    if not (name.endswith((".tar.zst", ".tar.gz"))):
        raise ConfigError(f"{output}: output name must end in .tar.zst or .tar.gz")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in [bundle, *sorted(bundle.rglob("*"))]:
            info = tar.gettarinfo(str(path), arcname=str(Path(bundle.name) / path.relative_to(bundle)))
            # Owner and time say nothing about the run and would make archives differ.
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    raw = buffer.getvalue()
    if name.endswith(".tar.zst"):
        packed = zstandard.ZstdCompressor(level=10).compress(raw)
    else:
        packed = gzip.compress(raw, mtime=0)
    output.write_bytes(packed)
    return output
