"""``marathon bundle seal|verify|pack|keygen``: the thin command-line layer over sealing and verification."""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
from pathlib import Path

from orchestrator.bundle.seal import pack_bundle, seal_bundle, write_signing_key
from orchestrator.bundle.verify import verify_bundle
from orchestrator.errors import ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("bundle", help="seal, verify and pack run bundles")
    commands = parser.add_subparsers(dest="bundle_command", metavar="ACTION", required=True)

    seal = commands.add_parser("seal", help="seal a finished journal directory into a BagIt bundle")
    seal.add_argument("bundle", type=Path)
    seal.add_argument("--key", type=Path, help="Ed25519 private key (PEM) to sign the tag manifest with")
    seal.set_defaults(func=_seal)

    verify = commands.add_parser(
        "verify", help="check manifests, hash chains and signature; exit 1 if not ok"
    )
    verify.add_argument("bundle", type=Path)
    verify.add_argument("--public-key", type=Path, help="trusted Ed25519 public key (PEM) for the signature")
    verify.set_defaults(func=_verify)

    pack = commands.add_parser("pack", help="pack a sealed bundle into one .tar.zst or .tar.gz file")
    pack.add_argument("bundle", type=Path)
    pack.add_argument("-o", "--output", type=Path, help="output file (default BUNDLE.tar.zst)")
    pack.set_defaults(func=_pack)

    keygen = commands.add_parser("keygen", help="write a new Ed25519 signing key (PEM)")
    keygen.add_argument("path", type=Path)
    keygen.set_defaults(func=_keygen)


def _seal(args: argparse.Namespace) -> int:
    # The bagging date is a wall-clock fact; it is taken here, at the edge, and lands in a tag file only.
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    seal_bundle(args.bundle, signing_key=args.key, bagging_date=today)
    print(f"sealed {args.bundle}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    # bagit logs each mismatch as a warning; the findings below already name them.
    logging.getLogger("bagit").setLevel(logging.ERROR)
    result = verify_bundle(args.bundle, public_key=args.public_key)
    if result.ok:
        signature = "signature ok" if result.signed else "unsigned"
        print(f"ok: {args.bundle}: {result.records} records, manifests and hash chains intact, {signature}")
        for rule in result.unhealthy_rules:
            failed = f"{rule.failures} of {rule.evaluations} evaluations failed"
            print(f"  rule {rule.rule} ({rule.group}): {failed}")
        return 0
    print(f"FAILED: {args.bundle}: {len(result.findings)} problem(s)", file=sys.stderr)
    for finding in result.findings:
        print(f"  {finding}", file=sys.stderr)
    return 1


def _pack(args: argparse.Namespace) -> int:
    bundle: Path = args.bundle
    output: Path = args.output or bundle.with_name(bundle.name + ".tar.zst")
    pack_bundle(bundle, output)
    print(f"packed {bundle} -> {output}")
    return 0


def _keygen(args: argparse.Namespace) -> int:
    if args.path.exists():
        raise ConfigError(f"{args.path}: already exists; refusing to overwrite a key")
    write_signing_key(args.path)
    print(f"wrote Ed25519 signing key {args.path}")
    return 0
