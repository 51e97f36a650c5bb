"""``marathon catalog export-ctk``: a catalog entry as a Chaos Toolkit experiment (JSON).

The action belongs to the ``catalog`` command; it registers itself there from the mechanisms package, whose
steps it writes out, because the catalog is data and imports no cluster code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml

from orchestrator.catalog.commands import catalog_actions
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.errors import CatalogError, ConfigError
from orchestrator.mechanisms.experiments import DEFAULT_HOLD_S, experiment
from orchestrator.mechanisms.registry import mechanism_of

Json = dict[str, Any]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = catalog_actions(subparsers).add_parser(
        "export-ctk", help="write an entry as a Chaos Toolkit experiment (JSON)"
    )
    export.add_argument("catalog_id", metavar="CATALOG_ID")
    export.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: stdout)")
    export.add_argument("--chaos-namespace", default="chaos-mesh", help="where chaos objects go")
    export.add_argument(
        "--prometheus", default="http://127.0.0.1:9090",
        help="base URL of the Prometheus holding the cluster's telemetry (the one a served twin writes to)",
    )  # fmt: skip
    export.add_argument(
        "--duration", type=float, default=DEFAULT_HOLD_S, metavar="SECONDS",
        help=f"how long the method holds the fault before the rollbacks (default {DEFAULT_HOLD_S:g})",
    )  # fmt: skip
    export.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    export.set_defaults(func=export_ctk_command)


def baseline_object(entry: Entry, *, namespace: str, root: Path) -> Json | None:
    """The object a code or config fault changes, as ``manifests/<app>/app.yaml`` deploys it."""
    changed = mechanism_of(entry).changed_object(entry, namespace)
    if changed is None:
        return None
    kind, name = changed.kind, changed.name
    path = root / "manifests" / entry.app / "app.yaml"
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the app's manifests: {exc.strerror}") from exc
    for document in documents:
        if document.get("kind") == kind and document.get("metadata", {}).get("name") == name:
            found: Json = document
            return found
    raise ConfigError(f"{path}: no {kind} named {name!r} for entry {entry.id}")


def export_ctk_command(args: argparse.Namespace) -> int:
    if not (args.duration > 0 and math.isfinite(args.duration)):
        raise ConfigError(f"--duration must be a positive number of seconds, got {args.duration}")
    root: Path = args.root or default_root()
    catalog = load_catalog(root=root)
    entry = catalog.by_id.get(args.catalog_id)
    if entry is None:
        raise CatalogError(f"CATALOG_ID = {args.catalog_id!r}: no such catalog entry")
    topology = load_topology(entry.app, root=root)
    document = experiment(
        entry,
        namespace=topology.namespace,
        chaos_namespace=args.chaos_namespace,
        prometheus_url=args.prometheus,
        baseline=baseline_object(entry, namespace=topology.namespace, root=root),
        hold_s=args.duration,
    )
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0
