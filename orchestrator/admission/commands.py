"""``marathon catalog admit``: screen entries on fresh twins and write ``fault_catalog/<app>/admission.json``.

The action belongs to the ``catalog`` command; it registers itself there from this package, because the
catalog is data and imports none of the screening.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.admission.screening import Settings, admission_file, admit, jobs_for
from orchestrator.catalog.admissions import admission_path, load_admission, merge, render_admission
from orchestrator.catalog.commands import catalog_actions
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.errors import CatalogError, ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admit = catalog_actions(subparsers).add_parser(
        "admit", help="screen entries on fresh twins; write fault_catalog/<app>/admission.json"
    )
    admit.add_argument("--app", required=True, help="application, e.g. online-boutique")
    admit.add_argument("--ids", nargs="+", default=None, metavar="ID", help="only these entries")
    admit.add_argument("--seed", type=int, default=1, help="the twins' seed (default 1)")
    admit.add_argument("--workers", type=int, default=2, help="entries screened at once (default 2)")
    admit.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    admit.set_defaults(func=admit_command)


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
    for catalog_id, error in sorted(failures.items()):
        print(f"FAILED    {catalog_id}: {error}", file=sys.stderr)
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
