"""``marathon catalog validate|list``: check catalog files, and show what an app's catalog holds."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orchestrator.catalog.faults import Category, Mechanism
from orchestrator.catalog.loading import load_catalog
from orchestrator.errors import CatalogError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("catalog", help="validate and list fault catalog entries")
    commands = parser.add_subparsers(dest="catalog_command", metavar="ACTION", required=True)

    validate = commands.add_parser(
        "validate", help="check catalog files; print every problem with file and line (exit 2 if any)"
    )
    validate.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="catalog files or app folders (default: all apps)"
    )
    validate.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    validate.set_defaults(func=_validate)

    listing = commands.add_parser("list", help="a table of one app's entries, with counts per category")
    listing.add_argument("--app", required=True, help="application, e.g. online-boutique")
    listing.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    listing.set_defaults(func=_list)

    admit = commands.add_parser(
        "admit", help="screen entries on fresh twins; write fault_catalog/<app>/admission.json"
    )
    admit.add_argument("--app", required=True, help="application, e.g. online-boutique")
    admit.add_argument("--ids", nargs="+", default=None, metavar="ID", help="only these entries")
    admit.add_argument("--seed", type=int, default=1, help="the twins' seed (default 1)")
    admit.add_argument("--workers", type=int, default=2, help="entries screened at once (default 2)")
    admit.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    admit.set_defaults(func=_admit)

    export = commands.add_parser("export-ctk", help="write an entry as a Chaos Toolkit experiment (JSON)")
    export.add_argument("entry_id", metavar="ENTRY_ID")
    export.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: stdout)")
    export.add_argument("--chaos-namespace", default="chaos-mesh", help="where chaos objects go")
    export.add_argument("--prometheus", default="http://127.0.0.1:9090", help="Prometheus base URL")
    export.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    export.set_defaults(func=_export_ctk)


def _validate(args: argparse.Namespace) -> int:
    paths: list[Path] | None = args.paths or None
    try:
        catalog = load_catalog(root=args.root, paths=paths)
    except CatalogError as exc:
        if not exc.problems:
            raise
        for problem in exc.problems:
            print(problem)
        files = len({problem.file for problem in exc.problems})
        print(f"{len(exc.problems)} problem(s) in {files} file(s)", file=sys.stderr)
        return 2
    print(f"ok: {len(catalog)} entries in {len(catalog.files)} files")
    return 0


def _list(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.app, root=args.root)
    console = Console(width=None if sys.stdout.isatty() else 200, highlight=False)
    table = Table(title=f"{args.app}: {len(catalog)} entries", title_justify="left")
    for column in ("id", "category", "mechanism", "target", "artifact"):
        table.add_column(column, no_wrap=True)
    for entry in catalog.entries:
        table.add_row(entry.id, entry.category.value, entry.mechanism.value, entry.target, entry.artifact)
    console.print(table)
    categories = Counter(entry.category for entry in catalog.entries)
    mechanisms = Counter(entry.mechanism for entry in catalog.entries)
    counts = Table(title="per category", title_justify="left")
    counts.add_column("category")
    counts.add_column("entries", justify="right")
    for category in Category:
        counts.add_row(category.value, str(categories[category]))
    console.print(counts)
    per_mechanism = Table(title="per mechanism", title_justify="left")
    per_mechanism.add_column("mechanism")
    per_mechanism.add_column("entries", justify="right")
    for mechanism in Mechanism:
        per_mechanism.add_row(mechanism.value, str(mechanisms[mechanism]))
    console.print(per_mechanism)
    return 0


# Both drive the cluster layer; importing it only when they run keeps the catalog package pure.
def _admit(args: argparse.Namespace) -> int:
    from orchestrator.admission.commands import admit_command

    return admit_command(args)


def _export_ctk(args: argparse.Namespace) -> int:
    from orchestrator.admission.commands import export_ctk_command

    return export_ctk_command(args)
