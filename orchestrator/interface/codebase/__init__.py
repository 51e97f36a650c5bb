"""The generated source of each service, built deterministically from the application's topology.

``codebase`` writes, for one service, a plausible repository in its language: a main module, configuration
loading from the env vars its manifest sets, a module per endpoint it serves, per dependency it calls and
per background job, a build file and a Dockerfile. ``Conventions`` are what one application's repository
shares (where services live, indentation per language), read from the catalog's code-fault paths and code.
Given code (``Site``) is placed inside the module that already has its path (or its file name); the tree
itself does not depend on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from orchestrator.catalog.topology import ServiceKind, Topology
from orchestrator.interface.codebase.cpp import cpp_modules
from orchestrator.interface.codebase.csharp import csharp_modules
from orchestrator.interface.codebase.datastores import datastore_modules
from orchestrator.interface.codebase.facts import Facts, facts_of
from orchestrator.interface.codebase.golang import go_modules
from orchestrator.interface.codebase.java import kotlin_modules
from orchestrator.interface.codebase.loadgen import locust_modules
from orchestrator.interface.codebase.modules import Module, declared, indent_text, place, style_of
from orchestrator.interface.codebase.nextjs import nextjs_modules
from orchestrator.interface.codebase.node import node_modules
from orchestrator.interface.codebase.php import php_modules
from orchestrator.interface.codebase.proxies import envoy_modules, nginx_modules
from orchestrator.interface.codebase.python import python_modules
from orchestrator.interface.codebase.ruby import ruby_modules
from orchestrator.interface.codebase.rust import rust_modules
from orchestrator.interface.codebase.spring import java_modules

_LANGUAGES = {
    "go": "go",
    "node.js": "js",
    "c#": "csharp",
    "python": "python",
    "java": "java",
    "kotlin": "kotlin",
    "c++": "cpp",
    "ruby": "ruby",
    "rust": "rust",
    "php": "php",
    "typescript": "ts",
    "nginx": "nginx",
    "envoy": "envoy",
}
_EXTENSIONS = {
    ".go": "go",
    ".js": "js",
    ".cs": "csharp",
    ".py": "python",
    ".java": "java",
    ".kt": "kotlin",
    ".cpp": "cpp",
    ".rb": "ruby",
    ".rs": "rust",
    ".php": "php",
    ".ts": "ts",
    ".tsx": "ts",
}
_UNITS = {
    "go": 4,
    "js": 2,
    "csharp": 4,
    "python": 4,
    "java": 4,
    "kotlin": 4,
    "cpp": 2,
    "ruby": 2,
    "rust": 4,
    "php": 4,
    "ts": 2,
    "nginx": 4,
    "envoy": 2,
}
Writer = Callable[[Facts, int], list[Module]]
_WRITERS: dict[str, Writer] = {
    "go": go_modules,
    "java": java_modules,
    "kotlin": kotlin_modules,
    "csharp": csharp_modules,
    "cpp": cpp_modules,
    "rust": rust_modules,
    "python": python_modules,
    "ruby": ruby_modules,
    "js": node_modules,
    "ts": nextjs_modules,
    "php": php_modules,
    "nginx": nginx_modules,
    "envoy": envoy_modules,
}


def language_of(language: str) -> str:
    """The writer key of a topology ``language`` (``Node.js`` -> js, ``Python (Locust)`` -> python)."""
    return _LANGUAGES.get(language.split()[0].lower(), "other")


@dataclass(frozen=True)
class Code:
    """A piece of code to place in a service's source: ``text`` in the module at ``path``."""

    key: str
    service: str
    path: str
    text: str


@dataclass(frozen=True)
class Site:
    """Where a piece of code went: its module's path and the text as it stands there (indented)."""

    path: str
    text: str
    prefix: str

    def spelled(self, code: str) -> str:
        """Other code as it would stand in the same place (no side effects)."""
        return indent_text(code, self.prefix)


@dataclass(frozen=True)
class Conventions:
    """What the repository of one application shares across services."""

    root: str  # where a service's files live, with {service}
    units: tuple[tuple[str, int], ...]  # indent width per language key

    def unit(self, language: str) -> int:
        return dict(self.units).get(language, _UNITS.get(language, 4))

    @classmethod
    def infer(cls, codes: Sequence[Code]) -> Conventions:
        """The conventions a set of given code follows (no side effects); defaults where it says nothing."""
        roots = Counter(
            "{service}" if code.path.startswith(f"{code.service}/") else "src/{service}" for code in codes
        )
        widths: dict[str, Counter[int]] = {}
        for code in codes:
            language = _EXTENSIONS.get(PurePosixPath(code.path).suffix)
            leads = [len(x) - len(x.lstrip(" ")) for x in code.text.split("\n") if x.strip()]
            step = min((n for n in leads if n > 0), default=0)
            if language and step:
                widths.setdefault(language, Counter())[step] += 1
        root = max(sorted(roots), key=lambda r: roots[r]) if roots else "src/{service}"
        units = tuple((lang, max(sorted(c), key=lambda n: c[n])) for lang, c in sorted(widths.items()))
        return cls(root=root, units=units)


@dataclass(frozen=True)
class Tree:
    """A service's generated source: its files, what each module is for, and where given code went."""

    files: dict[str, str]
    roles: dict[str, tuple[str, tuple[str, ...]]]  # path -> (role, the operations, dependencies or jobs)
    sites: dict[str, Site]  # by the key of the code


def codebase(topology: Topology, service: str, conventions: Conventions, codes: Sequence[Code] = ()) -> Tree:
    """The source tree of ``service`` with each given code placed in it (no side effects).

    The files and their names depend only on the topology and the conventions, never on ``codes``. Code that
    declares a whole member is placed before statements, so a statement never goes into a member that other
    code then replaces: every given code stays in the tree, whatever the order of ``codes``.
    """
    facts = facts_of(topology, service)
    language = language_of(facts.language)
    writer = _WRITERS.get(language, python_modules)
    if facts.kind in (ServiceKind.DATASTORE, ServiceKind.QUEUE):
        writer = datastore_modules
    elif facts.kind is ServiceKind.LOADGEN:
        writer = locust_modules
    modules = writer(facts, conventions.unit(language))
    root = conventions.root.format(service=service)
    for module in modules:
        module.path = f"{root}/{module.path}"
    sites: dict[str, Site] = {}
    placed: dict[str, Site] = {}
    for code in sorted(codes, key=lambda c: not _declares(modules, c)):
        if code.text in placed and placed[code.text].path == _host(modules, code.path).path:
            sites[code.key] = placed[code.text]
            continue
        host = _host(modules, code.path)
        prefix = place(host, code.text)
        sites[code.key] = placed[code.text] = Site(host.path, indent_text(code.text, prefix), prefix)
    ordered = sorted(modules, key=lambda m: m.path)
    roles = {m.path: (m.role, tuple(s for s in (m.subject, *m.merged) if s)) for m in ordered}
    return Tree({m.path: m.render() for m in ordered}, roles, sites)


def _declares(modules: list[Module], code: Code) -> bool:
    """Whether ``code`` declares a whole member of its module (a function, method or field)."""
    host = _host(modules, code.path)
    return declared(code.text.rstrip("\n").split("\n"), style_of(host.path)) is not None


def _host(modules: list[Module], path: str) -> Module:
    """The module ``path`` names: the one at that path, else the one with its file name, else the first
    module in the same language (the main module when there is none)."""
    exact = [m for m in modules if m.path == path]
    if exact:
        return exact[0]
    name = PurePosixPath(path).name
    named = sorted((m for m in modules if PurePosixPath(m.path).name == name), key=lambda m: m.path)
    if named:
        return named[0]
    suffix = PurePosixPath(path).suffix
    similar = sorted(
        (m for m in modules if m.path.endswith(suffix)), key=lambda m: (m.role != "core", m.path)
    )
    return similar[0] if similar else next(m for m in modules if m.role == "main")


__all__ = ["Code", "Conventions", "Site", "Tree", "codebase", "language_of"]
