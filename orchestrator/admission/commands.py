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
from orchestrator.catalog.admissions import (
    admission_path,
    load_admission,
    merge,
    render_admission,
    stale_entries,
)
from orchestrator.catalog.commands import catalog_actions
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.errors import CatalogError, ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admit = catalog_actions(subparsers).add_parser(
        "admit", help="screen entries on fresh twins; write fault_catalog/<app>/admission.json"
    )
    admit.add_argument("--app", required=True, help="application, e.g. online-boutique")
    chosen = admit.add_mutually_exclusive_group()
    chosen.add_argument("--ids", nargs="+", default=None, metavar="ID", help="only these entries")
    chosen.add_argument(
        "--stale", action="store_true",
        help="only entries with no admission record, or one made for other content",
    )  # fmt: skip
    admit.add_argument(
        "--check", action="store_true",
        help="write nothing; exit 1 when any screened entry had no current record (with --stale: CI's check)",
    )  # fmt: skip
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
    committed = load_admission(args.app, root=root)
    stale = stale_entries(catalog, committed) if committed is not None else [e.id for e in catalog.entries]
    if args.stale:
        ids = stale
        if not ids:
            print(f"{args.app}: every entry's admission record is current ({len(catalog.entries)} entries)")
            return 0
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
    admitted = sum(1 for record in records if record.admitted)
    summary = f"{admitted} of {len(records)} admitted, {len(failures)} could not run, in {elapsed:.1f} s"
    if args.check:
        screened = ids if ids is not None else [entry.id for entry in catalog.entries]
        missing = sorted(set(stale) & set(screened))
        print(f"{summary}; wrote nothing")
        if missing:
            print(
                f"{admission_path(args.app, root=root)}: no current record for {', '.join(missing)}; "
                f"re-admit with: marathon catalog admit --app {args.app} --stale",
                file=sys.stderr,
            )
        return 1 if failures or missing else 0
    fresh = admission_file(args.app, records, settings=settings)
    merged = merge(committed, fresh, catalog=catalog)
    path = admission_path(args.app, root=root)
    path.write_text(render_admission(merged), encoding="utf-8")
    print(f"{summary}; wrote {path}")
    return 1 if failures else 0
