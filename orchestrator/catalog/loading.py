"""Load and validate the fault catalog: every file of every app, every problem reported at once.

A catalog file is ``fault_catalog/<app>/<name>.yaml`` holding one mapping ``{faults: [entry, ...]}`` and/or
``{families: [family, ...]}`` (a template with one row of parameters per entry, expanded here by
``orchestrator.catalog.families``); the entry format and the cross-checks are described in
fault_catalog/README.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml
from pydantic import ValidationError

from orchestrator.catalog.apps import REPOSITORY_ROOT, app_names, listed
from orchestrator.catalog.checks import cross_check, located
from orchestrator.catalog.families import expand
from orchestrator.catalog.faults import FAULT_ENTRY, Category, CodeFault, Entry, Mechanism
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Topology, affected_scope, topology_path
from orchestrator.catalog.yamlfile import Document, Loc, read_documents
from orchestrator.errors import CatalogError, Problem

_TAGS = frozenset(m.value for m in Mechanism)
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_root() -> Path:
    """The project checkout this package lives in: ``fault_catalog/`` and ``manifests/`` sit at its top."""
    return REPOSITORY_ROOT


@dataclass(frozen=True, order=True)
class Origin:
    """Where an entry is written."""

    file: str
    line: int | None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class Catalog:
    """Validated entries sorted by id, where each was written, and each one's affected scope."""

    entries: tuple[Entry, ...]
    origins: Mapping[str, Origin]
    scopes: Mapping[str, frozenset[str]]
    files: tuple[str, ...] = ()
    by_id: Mapping[str, Entry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.entries, key=lambda entry: entry.id))
        object.__setattr__(self, "entries", ordered)
        object.__setattr__(self, "by_id", MappingProxyType({entry.id: entry for entry in ordered}))

    def __len__(self) -> int:
        return len(self.entries)

    def scope(self, entry: Entry | str) -> frozenset[str]:
        """The affected scope of an entry, computed from its app's topology (never written in YAML)."""
        return self.scopes[entry if isinstance(entry, str) else entry.id]

    def origin(self, entry: Entry | str) -> Origin:
        return self.origins[entry if isinstance(entry, str) else entry.id]

    def code_faults(self) -> list[CodeFault]:
        """The code-fault entries, in id order: the builds of the app's image registry beyond its base."""
        return [entry for entry in self.entries if isinstance(entry, CodeFault)]

    def content_hash(self) -> str:
        """SHA-256 over the entries' content hashes in id order: changes with any field of any entry."""
        digest = hashlib.sha256()
        for entry in self.entries:
            digest.update(f"{entry.id}={entry.content_hash()}\n".encode())
        return digest.hexdigest()

    def categories(self) -> tuple[Category, ...]:
        """The categories at least one entry belongs to, in the order of ``Category``."""
        present = {entry.category for entry in self.entries}
        return tuple(category for category in Category if category in present)

    def apps(self) -> tuple[str, ...]:
        return tuple(sorted({entry.app for entry in self.entries}))

    def for_app(self, app: str) -> Catalog:
        chosen = tuple(entry for entry in self.entries if entry.app == app)
        ids = {entry.id for entry in chosen}
        return Catalog(
            entries=chosen,
            origins={key: value for key, value in self.origins.items() if key in ids},
            scopes={key: value for key, value in self.scopes.items() if key in ids},
            files=tuple(f for f in self.files if Path(f).parent.name == app),
        )


@dataclass(frozen=True)
class _Source:
    """One catalog file, the app its folder names, and the project root its topology is read from."""

    path: Path
    app: str
    root: Path


@dataclass(frozen=True)
class _Placed:
    """A valid entry and where it is written: ``faults.N``, or ``families.N.template`` expanded by a row
    (then ``document`` shows the row's values at the template's lines, and ``row`` is the row's index)."""

    entry: Entry
    document: Document
    loc: Loc
    row: int | None = None

    @property
    def origin(self) -> Origin:
        where = self.loc if self.row is None else (*self.loc[:2], "each", self.row)
        return Origin(str(self.document.path), self.document.line_of(where))

    def problems(self, found: list[Problem]) -> list[Problem]:
        """``found`` with the row and the entry's id added to each message when the entry is expanded."""
        if self.row is None:
            return found
        suffix = f" (row {self.row}: {self.entry.id})"
        return [Problem(p.file, p.line, p.field, p.value, p.message + suffix) for p in found]


def load_catalog(
    app: str | None = None, *, root: Path | None = None, paths: Iterable[Path] | None = None
) -> Catalog:
    """Read, validate and cross-check catalog files; raise one ``CatalogError`` listing every problem.

    Without ``paths``: every ``fault_catalog/<app>/*.yaml`` under ``root`` (one app, or all of them). With
    ``paths`` (files, or app folders): exactly those; a file's app is its folder's name, and its topology is
    read from the project the file sits in (``<project>/fault_catalog/<app>/x.yaml``), else from ``root``.
    """
    base = root if root is not None else default_root()
    if paths is not None and app is not None:
        raise ValueError("give either app or paths, not both")
    sources = _sources_from_paths(paths, base) if paths is not None else _sources_of_apps(app, base)
    catalog, problems = _load(sources, _read_fast)
    if catalog is not None:
        return catalog
    # Something is wrong: read again with the line of every value so each problem is located exactly.
    _, problems = _load(sources, read_documents)
    problems.sort(key=lambda problem: (problem.file, problem.line or 0))
    files = len({p.file for p in problems})
    raise CatalogError(f"fault catalog: {len(problems)} problem(s) in {files} file(s)", problems)


def _load(
    sources: list[_Source], read: Callable[[Path], list[Document]]
) -> tuple[Catalog | None, list[Problem]]:
    problems: list[Problem] = []
    placed: list[_Placed] = []
    for source in sources:
        placed.extend(_read_file(source, read, problems))
    problems.extend(_duplicates(placed))
    topologies = _topologies({(s.app, s.root) for s in sources}, problems)
    scopes: dict[str, frozenset[str]] = {}
    for item, source in _with_sources(placed, sources):
        topology = topologies.get((source.app, source.root))
        problems.extend(item.problems(_check_app(item, source.app)))
        if topology is None:
            continue
        found = cross_check(item.entry, topology, item.document, item.loc)
        problems.extend(item.problems(found))
        if not found:
            scopes[item.entry.id] = affected_scope(topology, item.entry.target)
    if problems:
        return None, problems
    catalog = Catalog(
        entries=tuple(item.entry for item in placed),
        origins={item.entry.id: item.origin for item in placed},
        scopes=scopes,
        files=tuple(str(source.path) for source in sources),
    )
    return catalog, []


def _read_fast(path: Path) -> list[Document]:
    """A file read with the C YAML loader, remembering only where each entry starts (enough when valid)."""
    try:
        loader = _FAST_LOADER(path.read_text(encoding="utf-8"))
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: unreadable: {exc}") from exc
    lines: dict[Loc, int] = {}
    if isinstance(node, yaml.MappingNode):
        lines[()] = node.start_mark.line + 1
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode) or not isinstance(value, yaml.SequenceNode):
                continue
            if key.value == "faults":
                lines.update({("faults", i): item.start_mark.line + 1 for i, item in enumerate(value.value)})
            elif key.value == "families":
                for i, family in enumerate(value.value):
                    lines[("families", i)] = family.start_mark.line + 1
                    lines.update(_row_lines(family, i))
    return [Document(path=path, data=data, lines=lines)]


def _row_lines(family: yaml.Node, index: int) -> dict[Loc, int]:
    """The line of each row of a family's ``each`` (an expanded entry's origin)."""
    if not isinstance(family, yaml.MappingNode):
        return {}
    for key, value in family.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "each" and isinstance(value, yaml.SequenceNode):
            return {
                ("families", index, "each", k): row.start_mark.line + 1 for k, row in enumerate(value.value)
            }
    return {}


def _sources_of_apps(app: str | None, root: Path) -> list[_Source]:
    catalog_dir = root / "fault_catalog"
    if app is not None:
        if not (catalog_dir / app).is_dir():
            known = app_names(root=root)
            if app not in known:
                raise CatalogError(f"unknown app {app!r}; known apps: {listed(known)}")
            raise CatalogError(f"app {app!r} has no catalog folder {catalog_dir / app}")
        folders = [catalog_dir / app]
    else:
        folders = sorted(p for p in catalog_dir.iterdir() if p.is_dir()) if catalog_dir.is_dir() else []
    return [_Source(path, folder.name, root) for folder in folders for path in sorted(folder.glob("*.yaml"))]


def _sources_from_paths(paths: Iterable[Path], root: Path) -> list[_Source]:
    sources = []
    for given in paths:
        files = sorted(given.glob("*.yaml")) if given.is_dir() else [given]
        for path in files:
            project = path.parent.parent
            owner = project.parent if project.name == "fault_catalog" else root
            sources.append(_Source(path, path.parent.name, owner))
    return sources


def _read_file(
    source: _Source, read: Callable[[Path], list[Document]], problems: list[Problem]
) -> list[_Placed]:
    try:
        documents = read(source.path)
    except CatalogError as exc:
        problems.extend(exc.problems or [Problem(str(source.path), None, "", "", str(exc))])
        return []
    where = str(source.path)
    shape = "a catalog file is one YAML mapping: {faults: [entry, ...], families: [family, ...]}"
    if len(documents) != 1 or not isinstance(documents[0].data, dict):
        problems.append(Problem(where, 1, "", "", shape))
        return []
    document = documents[0]
    for key in sorted(set(document.data) - {"faults", "families"}, key=str):
        problems.append(Problem(where, document.line_of((key,)), str(key), "", "unknown field"))
    faults, families = document.data.get("faults"), document.data.get("families")
    if faults is None and families is None:
        problems.append(Problem(where, 1, "faults", "", "a non-empty list of fault entries is required"))
        return []
    placed: list[_Placed] = []
    for key, items in (("faults", faults), ("families", families)):
        if items is not None and (not isinstance(items, list) or not items):
            what = "fault entries" if key == "faults" else "families"
            problems.append(
                Problem(where, document.line_of((key,)), key, "", f"a non-empty list of {what} is required")
            )
    if isinstance(faults, list):
        for index, item in enumerate(faults):
            placed.extend(_validated(item, document, ("faults", index), None, problems))
    if isinstance(families, list):
        for index, family in enumerate(families):
            rows, found = expand(document, index, family)
            problems.extend(found)
            for row in rows:
                placed.extend(_validated(row.data, row.document, row.loc, row.row, problems))
    return placed


def _validated(
    item: object, document: Document, loc: Loc, row: int | None, problems: list[Problem]
) -> list[_Placed]:
    """The entry at ``loc`` if it validates, else nothing and its problems added to ``problems``."""
    try:
        entry = FAULT_ENTRY.validate_python(item)
    except ValidationError as exc:
        found = _entry_problems(exc, document, loc)
        if row is not None:
            named = item.get("id") if isinstance(item, dict) else None
            found = [
                Problem(p.file, p.line, p.field, p.value, f"{p.message} (row {row}: {named})") for p in found
            ]
        problems.extend(found)
        return []
    return [_Placed(entry, document, loc, row)]


def _entry_problems(error: ValidationError, document: Document, base: Loc) -> list[Problem]:
    """Located problems of one entry, with the union tag pydantic puts first removed from each field."""
    problems = []
    for item in error.errors():
        parts = [part for part in item["loc"] if isinstance(part, str | int)]
        if parts and parts[0] in _TAGS:
            parts = parts[1:]
        message = item["msg"].removeprefix("Value error, ")
        if not parts and message.startswith("artifact"):
            # The entry-level check of artifact kind against mechanism is about the artifact field.
            parts = ["artifact"]
        if item["type"] == "missing":
            message = "required field is missing"
        elif item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "union_tag_not_found":
            parts, message = ["mechanism"], "required field is missing (code, config or chaos)"
        elif item["type"] == "union_tag_invalid":
            parts, message = ["mechanism"], "unknown mechanism; expected code, config or chaos"
        problems.append(located(document, (*base, *parts), message))
    return problems


def _duplicates(placed: list[_Placed]) -> list[Problem]:
    places: dict[str, list[_Placed]] = {}
    for item in placed:
        places.setdefault(item.entry.id, []).append(item)
    problems = []
    for catalog_id, items in sorted(places.items()):
        if len(items) < 2:
            continue
        for item in items:
            others = ", ".join(str(other.origin) for other in items if other is not item)
            loc: Loc = (*item.loc, "id")
            found = [located(item.document, loc, f"duplicate id {catalog_id!r}: also at {others}")]
            problems.extend(item.problems(found))
    return problems


def _check_app(item: _Placed, app: str) -> list[Problem]:
    if item.entry.app == app:
        return []
    loc: Loc = (*item.loc, "app")
    return [located(item.document, loc, f"does not match the folder the file is in ({app})")]


def _with_sources(placed: list[_Placed], sources: list[_Source]) -> Iterable[tuple[_Placed, _Source]]:
    by_path = {source.path: source for source in sources}
    for item in placed:
        yield item, by_path[item.document.path]


def _topologies(wanted: set[tuple[str, Path]], problems: list[Problem]) -> dict[tuple[str, Path], Topology]:
    loaded = {}
    for app, root in sorted(wanted):
        known = app_names(root=root)
        if app not in known:
            problems.append(_unknown_app(root, app, known))
            continue
        try:
            loaded[(app, root)] = load_topology(app, root=root)
        except CatalogError as exc:
            path = str(topology_path(app, root=root))
            problems.extend(
                exc.problems or [Problem(path, None, "", "", f"entries are checked against it: {exc}")]
            )
    return loaded


def _unknown_app(root: Path, app: str, known: tuple[str, ...]) -> Problem:
    """A catalog folder whose app has no topology file, so no app of that name exists."""
    message = f"no topology for app {app!r}, so the app is unknown; known apps: {listed(known)}"
    return Problem(str(topology_path(app, root=root)), None, "app", repr(app), message)
