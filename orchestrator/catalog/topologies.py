"""Loading the application topology files, and the steady request rates they imply.

``load_topology`` reads ``manifests/<app>/topology.yaml`` below the repository root; every problem in the
file is reported at once, each with its file, line, field and value.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from orchestrator.catalog.apps import REPOSITORY_ROOT, app_names, listed
from orchestrator.catalog.topology import Call, PublishedSchedule, Topology, topology_path
from orchestrator.catalog.yamlfile import Document, problems_from, read_documents
from orchestrator.errors import CatalogError, Problem

_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_topology(app: str, *, root: Path | None = None) -> Topology:
    """The validated topology of ``app``; raises ``CatalogError`` for an unknown app or a malformed file.

    Results are cached per (root, app) and re-read only when the file changes on disk.
    """
    base = (root or REPOSITORY_ROOT).resolve()
    path = topology_path(app, root=base)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        known = listed(app_names(root=base))
        raise CatalogError(f"unknown app {app!r}: no {path}; known apps: {known}") from None
    return _load_cached(base, app, stamp)


@lru_cache(maxsize=32)
def _load_cached(root: Path, app: str, stamp: int) -> Topology:
    del stamp  # part of the cache key only: an edited file is read again
    return read_topology(topology_path(app, root=root))


def read_topology(path: Path) -> Topology:
    """Read and validate one topology file (no caching).

    A valid file is read once with the C YAML loader; only a file with problems is read again, with
    the line of every value, to locate them.
    """
    try:
        datas = [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_FAST_LOADER) if d]
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        datas = []
    if len(datas) == 1 and isinstance(datas[0], dict):
        try:
            topology = Topology.model_validate(datas[0], context={"defer_references": True})
        except ValidationError:
            pass
        else:
            if not topology.reference_errors():
                return topology
    return _read_located(path)


def _read_located(path: Path) -> Topology:
    documents = [d for d in read_documents(path) if d.data is not None]
    if len(documents) != 1:
        problem = Problem(str(path), None, "", "", f"expected one YAML document, found {len(documents)}")
        raise CatalogError(f"{path}: invalid", [problem])
    document = documents[0]
    if not isinstance(document.data, dict):
        problem = Problem(str(path), document.line_of(()), "", "", "expected a mapping at the top level")
        raise CatalogError(f"{path}: invalid", [problem])
    try:
        topology = Topology.model_validate(document.data, context={"defer_references": True})
    except ValidationError as exc:
        raise CatalogError(f"{path}: invalid", problems_from(exc, document)) from exc
    problems = [_located(document, loc, message) for loc, message in topology.reference_errors()]
    if problems:
        raise CatalogError(f"{path}: invalid", problems)
    return topology


def _located(document: Document, loc: tuple[str | int, ...], message: str) -> Problem:
    value = document.value_at(loc)
    shown = "" if value is None or isinstance(value, dict | list) else repr(value)
    field = ".".join(str(part) for part in loc)
    return Problem(str(document.path), document.line_of(loc), field, shown, message)


def request_rates(topology: Topology) -> dict[str, float]:
    """Requests per second each service receives under the steady workload (no side effects).

    The load generator's ``requests_per_second`` arrive at the entry point, split over the routes by
    weight; a call multiplies its caller's rate by its ``count`` and ``share``. Background flows add
    their own rates. Every service appears, with 0.0 when nothing calls it.
    """
    rates = dict.fromkeys(topology.service_names, 0.0)
    total_weight = sum(route.weight for route in topology.routes)
    if total_weight > 0:
        rates[topology.entry_point] += topology.requests_per_second
        for route in topology.routes:
            route_rate = topology.requests_per_second * route.weight / total_weight
            for name, rate in _call_rates(route.calls, route_rate):
                rates[name] += rate
    for flow in topology.background:
        rates[flow.service] += flow.rate_per_second
        for name, rate in _call_rates(flow.calls, flow.rate_per_second):
            rates[name] += rate
    return rates


def _call_rates(calls: tuple[Call, ...], caller_rate: float) -> Iterator[tuple[str, float]]:
    for call in calls:
        rate = caller_rate * call.count * call.share
        yield call.to, rate
        yield from _call_rates(call.calls, rate)


def published_schedule(app: str, *, root: Path | None = None) -> PublishedSchedule | None:
    """The arrivals and cap that reproduce the app's published concurrency (its topology's
    ``published_schedule``), or None for an app without them or without a readable topology (whoever uses
    the app reports that)."""
    try:
        return load_topology(app, root=root).published_schedule
    except CatalogError:
        return None
