"""``marathon catalog validate|list``: check catalog files, and show what an app's catalog holds (with each
entry's admission verdict).

``admit`` (``orchestrator.admission.commands``) and ``export-ctk``
(``orchestrator.mechanisms.experiment_commands``) add themselves to the same command through
``catalog_actions``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orchestrator.catalog.admissions import AdmissionRecord, load_admission
from orchestrator.catalog.faults import Category, Entry, Mechanism
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


def catalog_actions(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The actions of the ``catalog`` command, for the packages that add one of their own (``admit``,
    ``export-ctk``): they drive a cluster, which the catalog, being data, never imports."""
    parser = subparsers.choices["catalog"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise LookupError("the catalog command has no actions")  # register() always adds them


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
    admission = load_admission(args.app, root=args.root)
    records = admission.by_id() if admission is not None else None
    verdicts = [_verdict(entry, records) for entry in catalog.entries]
    console = Console(width=None if sys.stdout.isatty() else 220, highlight=False)
    title = f"{args.app}: {len(catalog)} entries"
    if admission is not None:
        title += f", {verdicts.count('admitted')} admitted"
    table = Table(title=title, title_justify="left")
    for column in ("id", "category", "mechanism", "target", "artifact", "admission"):
        table.add_column(column, no_wrap=True)
    for entry, verdict in zip(catalog.entries, verdicts, strict=True):
        table.add_row(
            entry.id, entry.category.value, entry.mechanism.value, entry.target, entry.artifact, verdict
        )
    console.print(table)
    screened = admission is not None
    admitted = [
        entry for entry, verdict in zip(catalog.entries, verdicts, strict=True) if verdict == "admitted"
    ]
    console.print(_counts("category", [c.value for c in Category], catalog.entries, admitted, screened))
    console.print(_counts("mechanism", [m.value for m in Mechanism], catalog.entries, admitted, screened))
    return 0


def _counts(
    key: str, values: list[str], entries: Sequence[Entry], admitted: Sequence[Entry], screened: bool
) -> Table:
    """Entries (and, once the app has admission records, admitted entries) per value of ``key``."""
    every = Counter(str(getattr(entry, key)) for entry in entries)
    passed = Counter(str(getattr(entry, key)) for entry in admitted)
    counts = Table(title=f"per {key}", title_justify="left")
    counts.add_column(key)
    counts.add_column("entries", justify="right")
    if screened:
        counts.add_column("admitted", justify="right")
    for value in values:
        counts.add_row(value, str(every[value]), *([str(passed[value])] if screened else []))
    return counts


def _verdict(entry: Entry, records: Mapping[str, AdmissionRecord] | None) -> str:
    """What the app's admission records (by id) say of an entry: the scheduler draws only the admitted ones
    whose content is the one screened (no side effects)."""
    if records is None:
        return "-"  # nothing screened: every entry may be drawn
    record = records.get(entry.id)
    if record is None:
        return "not screened"
    if record.content_hash != entry.content_hash():
        return "stale"
    return "admitted" if record.admitted else "rejected"
