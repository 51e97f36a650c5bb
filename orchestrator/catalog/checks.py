"""Cross-checks of one valid catalog entry against its app's topology, each problem located in its file.

The models in faults.py check an entry on its own; these check what only the topology can tell (do the named
services, nodes and zones exist) and that the parts of an entry describe the same fault (the artifact names
the field the recipe changes, the release tag is the image tag the build gets, the probe is namespaced).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.catalog.faults import (
    WORKLOAD_OBJECTS,
    Artifact,
    ChaosFault,
    CodeFault,
    ConfigFault,
    Entry,
)
from orchestrator.catalog.topology import Call, Topology, affected_scope
from orchestrator.catalog.yamlfile import Document, Loc
from orchestrator.errors import Problem
from orchestrator.vocabulary.series import series_names

# A probe may read only series of the contract (the twin emits them and real exporters provide them).
KNOWN_SERIES: frozenset[str] = series_names()

_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def located(document: Document, loc: Loc, message: str) -> Problem:
    """A problem at ``loc`` of a document, showing the scalar value found there."""
    value = document.value_at(loc)
    shown = "" if value is None or isinstance(value, dict | list) else repr(value)
    field = ".".join(str(part) for part in loc)
    return Problem(str(document.path), document.line_of(loc), field, shown, message)


def cross_check(entry: Entry, topology: Topology, document: Document, prefix: Loc) -> list[Problem]:
    """Every disagreement between a valid entry, its app's topology and itself (no side effects)."""
    found: list[tuple[Loc, str]] = []
    services = set(topology.service_names)

    def need_service(loc: Loc, name: str | None) -> None:
        if name is not None and name not in services:
            found.append((loc, f"{name!r} is not a service of {topology.app} ({_listed(services)})"))

    need_service(("target",), entry.target)
    for position, culprit in enumerate(entry.culprits):
        need_service(("culprits", position), culprit)
    need_service(("log", "service"), entry.log.service)
    need_service(("remedy", "service"), entry.remedy.service)
    if entry.target in services and entry.log.service in services:
        scope = affected_scope(topology, entry.target)
        if entry.log.service not in scope:
            found.append(
                (("log", "service"), f"cannot see {entry.target}'s symptoms (scope: {_listed(scope)})")
            )
    found.extend((("artifact",), message) for message in _artifact_problems(entry, topology))
    found.extend(_recipe_problems(entry, topology))
    found.extend((("probe", "query"), message) for message in _probe_problems(entry.probe.query))
    return [located(document, (*prefix, *loc), message) for loc, message in found]


def _listed(names: set[str] | frozenset[str]) -> str:
    return ", ".join(sorted(names))


def _artifact_problems(entry: Entry, topology: Topology) -> list[str]:
    artifact = entry.responsible
    names = artifact.names()
    problems: list[str] = []
    services = set(topology.service_names)
    named = [names[key] for key in ("workload", "service", "peer") if key in names]
    problems.extend(
        f"names {name!r}, not a service of {topology.app}" for name in named if name not in services
    )
    nodes = {node.name for node in topology.nodes}
    zones = {node.zone for node in topology.nodes}
    if "node" in names and names["node"] not in nodes:
        problems.append(f"names node {names['node']!r}; the topology's nodes are {_listed(nodes)}")
    if "zone" in names and names["zone"] not in zones:
        problems.append(f"names zone {names['zone']!r}; the topology's zones are {_listed(zones)}")
    if named and not {entry.target, *entry.culprits} & set(named):
        problems.append("names neither the target nor a culprit")
    expected = _expected_artifacts(entry)
    if expected is not None and artifact.normalized() not in {a.normalized() for a in expected}:
        problems.append(
            f"does not describe what the recipe changes; expected {' or '.join(map(str, expected))}"
        )
    if isinstance(entry, ChaosFault):
        kinds = frozenset(entry.inject.chaos_kind.artifacts)
        if artifact.kind not in kinds:
            problems.append(f"kind {artifact.kind!r} does not fit {entry.inject.kind} ({_listed(kinds)})")
        elif entry.target in services and names.get("workload", entry.target) != entry.target:
            problems.append(f"a chaos artifact names its target first ({entry.target!r})")
    return problems


def _expected_artifacts(entry: Entry) -> list[Artifact] | None:
    """The artifacts a code or config recipe can be responsible for; None when any of its kind may do."""
    if isinstance(entry, CodeFault):
        return [Artifact("release", f"{entry.target}@{entry.inject.image_tag}")]
    if not isinstance(entry, ConfigFault):
        return None
    inject = entry.inject
    owner = inject.name or entry.target
    head, _, rest = inject.field.partition("/")
    if head == "env":
        return [Artifact("config", f"{owner}/env/{rest}"), Artifact("credentials", f"{owner}/env/{rest}")]
    if head == "port":
        return [Artifact("config", f"{owner}/port/{rest}")]
    if head == "args":
        return [Artifact("config", f"{owner}/args"), Artifact("credentials", f"{owner}/args")]
    if head == "resources":
        return [Artifact("resources", f"{owner}/{rest}")]
    if head == "replicas":
        return [Artifact("replicas", owner)]
    if head == "probe":
        return [Artifact("probe", f"{owner}/{rest.partition('/')[0]}")]
    if head == "targetPort":
        return [Artifact("service", f"{owner}/targetPort")]
    if head == "flags":
        return [Artifact("feature-flag", rest)]
    tag = (
        str(inject.value).rpartition(":")[2] if isinstance(inject.value, str) and ":" in inject.value else "?"
    )
    return [Artifact("release", f"{owner}@{tag}")]


def served_ops(topology: Topology, service: str) -> frozenset[str]:
    """The operations a service serves: route names for the entry point, else the ops callers call."""
    if service == topology.entry_point:
        return frozenset(route.name for route in topology.routes)
    return frozenset(
        call.op for route in topology.routes for call in _calls(route.calls) if call.to == service
    )


def _calls(calls: tuple[Call, ...]) -> Iterator[Call]:
    for call in calls:
        yield call
        yield from _calls(call.calls)


def _recipe_problems(entry: Entry, topology: Topology) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    services = set(topology.service_names)
    if isinstance(entry, CodeFault) and entry.target in services:
        workload = topology.service(entry.target).workload
        if workload != "Deployment":
            problems.append(
                (("target",), f"{entry.target} runs as a {workload}; a release changes a Deployment")
            )
        served = served_ops(topology, entry.target)
        for position, op in enumerate(entry.inject.behaviour.ops):
            if op not in served:
                message = f"{entry.target} serves no {op!r} ({_listed(set(served)) or 'no ops'})"
                problems.append((("inject", "behaviour", "ops", position), message))
    if isinstance(entry, ConfigFault):
        inject = entry.inject
        if inject.object != "configmap" and inject.name is not None and inject.name not in services:
            problems.append((("inject", "name"), f"{inject.name!r} is not a service ({_listed(services)})"))
        owner = inject.name or entry.target
        if inject.object in WORKLOAD_OBJECTS and owner in services:
            workload = topology.service(owner).workload
            if WORKLOAD_OBJECTS[inject.object] != workload:
                message = f"{topology.app} runs {owner} as a {workload}, not a {inject.object}"
                problems.append((("inject", "object"), message))
        if inject.field == "image" and not (isinstance(inject.value, str) and ":" in inject.value):
            problems.append((("inject", "value"), "an image is written <repository>:<tag>"))
    if isinstance(entry, ChaosFault):
        spec = entry.inject.spec
        peer = entry.responsible.names().get("peer")
        selected = _selected_app(spec.get("target"))
        if selected is not None and selected not in services:
            problems.append((("inject", "spec", "target"), f"selects {selected!r}, not a service"))
        elif selected is not None and peer is not None and selected != peer:
            problems.append(
                (("inject", "spec", "target"), f"selects {selected!r} but the artifact names {peer!r}")
            )
        names = entry.responsible.names()
        if entry.inject.kind == "drain-node" and spec.get("node") != names.get("node"):
            # A fault blamed on a node acts on the node its spec names.
            problems.append(
                (("inject", "spec", "node"), f"must name the artifact's node ({names.get('node')})")
            )
        if entry.inject.kind == "drain-zone":
            problems.extend(_zone_problems(entry, topology, names.get("zone")))
    return problems


def _zone_problems(entry: ChaosFault, topology: Topology, zone: str | None) -> list[tuple[Loc, str]]:
    """A zone's drain is blamed on the zone it acts on: its spec's, else the zone of its target's site, where
    the target runs until a failover moves it (no side effects)."""
    if zone is None:
        return [(("artifact",), "a zone's drain blames its zone: node:zone/<zone>")]
    named = entry.inject.spec.get("zone")
    if named is not None:
        return (
            [] if named == zone else [(("inject", "spec", "zone"), f"must name the artifact's zone ({zone})")]
        )
    home = topology.service(entry.target).site if entry.target in topology.service_names else None
    site = next((s for s in topology.sites if s.name == home), None)
    if site is None:
        return [
            (("inject", "spec"), f"names no zone, and {entry.target!r} belongs to no site of the topology")
        ]
    if site.zone != zone:
        return [(("artifact",), f"must name the zone of {entry.target!r}'s site {site.name!r} ({site.zone})")]
    return []


def _selected_app(target: object) -> str | None:
    """The ``app`` label a Chaos Mesh ``target`` selector picks, if it is written that way."""
    if not isinstance(target, dict):
        return None
    selector = target.get("selector")
    labels = selector.get("labelSelectors") if isinstance(selector, dict) else None
    app = labels.get("app") if isinstance(labels, dict) else None
    return app if isinstance(app, str) else None


def _probe_problems(query: str) -> list[str]:
    problems = []
    variables = set(_VARIABLE.findall(query))
    if "namespace" not in variables:
        problems.append('must select namespace="$namespace" (the app namespace is substituted at run time)')
    problems.extend(
        f"unknown variable ${name}; only $namespace is substituted"
        for name in sorted(variables - {"namespace"})
    )
    unknown = sorted(set(_SELECTOR.findall(query)) - KNOWN_SERIES)
    problems.extend(f"series {name!r} is not in the series contract" for name in unknown)
    return problems
