"""``marathon catalog admit`` and ``marathon catalog export-ctk``: the handlers behind the catalog command.

They live beside the screening they drive; ``orchestrator.catalog.commands`` registers them and imports
this module only when one of them runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from orchestrator.admission.screening import Settings, admission_file, admit, jobs_for
from orchestrator.catalog.admissions import admission_path, load_admission, merge, render_admission
from orchestrator.catalog.faults import ChaosFault, CodeFault
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.cluster.experiments import Entry, experiment
from orchestrator.errors import CatalogError, ConfigError

Json = dict[str, Any]


def admit_command(args: argparse.Namespace) -> int:
    root: Path = args.root or default_root()
    catalog = load_catalog(args.app, root=root)
    ids: list[str] | None = args.ids or None
    unknown = sorted(set(ids or ()) - set(catalog.by_id))
    if unknown:
        raise CatalogError(f"--ids: {', '.join(unknown)}: not in the {args.app} catalog")
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    settings = Settings(seed=args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="admission-") as scratch:
        jobs = jobs_for(catalog, ids=ids, root=root, workdir=Path(scratch), settings=settings)
        records, failures = admit(jobs, workers=args.workers)
    elapsed = time.monotonic() - started
    for record in records:
        verdict = "admitted" if record.admitted else "REJECTED"
        print(f"{verdict:<9} {record.id}: {'; '.join(record.reasons)}")
    for entry_id, error in sorted(failures.items()):
        print(f"FAILED    {entry_id}: {error}", file=sys.stderr)
    fresh = admission_file(args.app, records, settings=settings)
    merged = merge(load_admission(args.app, root=root), fresh, catalog=catalog)
    path = admission_path(args.app, root=root)
    path.write_text(render_admission(merged), encoding="utf-8")
    admitted = sum(1 for record in records if record.admitted)
    print(
        f"{admitted} of {len(records)} admitted, {len(failures)} could not run, in {elapsed:.1f} s; "
        f"wrote {path}"
    )
    return 1 if failures else 0


def baseline_object(entry: Entry, *, root: Path) -> Json | None:
    """The object a code or config fault changes, as ``manifests/<app>/app.yaml`` deploys it."""
    if isinstance(entry, ChaosFault):
        return None
    if isinstance(entry, CodeFault):
        kind, name = "Deployment", entry.target
    else:
        kinds = {"deployment": "Deployment", "service": "Service", "configmap": "ConfigMap"}
        kind, name = kinds[entry.inject.object], entry.inject.name or entry.target
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
    root: Path = args.root or default_root()
    catalog = load_catalog(root=root)
    entry = catalog.by_id.get(args.entry_id)
    if entry is None:
        raise CatalogError(f"ENTRY_ID = {args.entry_id!r}: no such catalog entry")
    topology = load_topology(entry.app, root=root)
    document = experiment(
        entry,
        namespace=topology.namespace,
        chaos_namespace=args.chaos_namespace,
        prometheus_url=args.prometheus,
        baseline=baseline_object(entry, root=root),
    )
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0
