"""Every probe measures its own fault's scope (docs/metrics.md, "Inputs").

A probe read at the entry point, or at a caller of the culprit, stays red while any other fault on that path
is live, so a repaired fault would look unrepaired. Each label matcher of a probe that names a service, a
workload, its pods or an operation must name the fault's own culprit (or its target); the entry point only
when it is the culprit. A one-shot fault's probe uses windows short enough to see recovery within its life.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import pytest

from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Call, Topology

MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
RANGE = re.compile(r"\[(\d+)([smh])\]")
SERVICE_LABELS = frozenset(
    {"service_name", "deployment", "statefulset", "service", "consumergroup", "container"}
)
# <deployment>-<replicaset hash>-<suffix>, or <statefulset>-<ordinal>
POD_NAME = {"Deployment": "{}-5d9c7b8f6-x2x7k", "StatefulSet": "{}-0"}
ONE_SHOT_MAX_RANGE_S = 120


def _calls(caller: str, calls: tuple[Call, ...]) -> Iterator[tuple[str, Call]]:
    for call in calls:
        yield caller, call
        yield from _calls(call.to, call.calls)


@functools.cache
def _topology(app: str) -> Topology:
    return load_topology(app)


@functools.cache
def _ops(app: str) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each operation of the app: the services that serve it, and those that call it."""
    topology = _topology(app)
    served: dict[str, set[str]] = {}
    calling: dict[str, set[str]] = {}
    roots = [(topology.entry_point, route.calls) for route in topology.routes]
    for route in topology.routes:  # a route is an operation of the entry point
        served.setdefault(route.name, set()).add(topology.entry_point)
    roots += [(flow.service, flow.calls) for flow in topology.background]
    for root, calls in roots:
        for caller, call in _calls(root, calls):
            served.setdefault(call.op, set()).add(call.to)
            calling.setdefault(call.op, set()).add(caller)
    return {op: (frozenset(served[op]), frozenset(calling.get(op, ()))) for op in served}


def _matching(operator: str, value: str, candidates: list[str]) -> set[str]:
    if operator == "=":
        return {value} & set(candidates) if candidates else {value}
    return {c for c in candidates if re.fullmatch(value, c)}


def scope_problems(entry: Entry) -> list[str]:
    """What in ``entry``'s probe reads outside its own scope (empty when nothing does)."""
    topology = _topology(entry.app)
    own = frozenset(entry.culprits) | {entry.target}
    services = sorted(s.name for s in topology.services)
    problems: list[str] = []
    scoped = False
    matchers = MATCHER.findall(entry.probe.query)
    # Spans the culprit itself records (its own SERVER spans, or its CLIENT spans to what it calls).
    recorders = {v for label, op, v in matchers if label == "service_name" and op == "="}
    own_spans = bool(recorders) and recorders <= own
    for label, operator, value in matchers:
        if operator in ("!=", "!~") or label == "namespace":
            continue
        if label in SERVICE_LABELS:
            named = _matching(operator, value, services) if operator == "=~" else {value}
        elif label == "pod":
            named = {
                s for s in services if re.fullmatch(value, POD_NAME[topology.service(s).workload].format(s))
            }
        elif label == "span_name":
            ops = _ops(entry.app)
            chosen = _matching(operator, value, sorted(ops))
            if not chosen:
                problems.append(f"span_name {operator} {value!r} names no operation of {entry.app}")
                continue
            named = set().union(*(ops[op][0] for op in chosen))
            if own_spans and all((ops[op][0] | ops[op][1]) & recorders for op in chosen):
                named = set(recorders)  # spans the culprit records: calls it serves, or makes
        else:
            continue
        scoped = True
        if not named:
            problems.append(f"{label} {operator} {value!r} names nothing")
        outside = sorted(named - own)
        if outside:
            problems.append(f"{label} {operator} {value!r} reads {outside}, outside culprits {sorted(own)}")
    if not scoped:
        problems.append("the probe names no service, workload, pod or operation")
    return problems


ENTRIES = load_catalog().entries


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_probe_reads_the_faults_own_scope(entry: Entry) -> None:
    assert scope_problems(entry) == []


def test_the_entry_point_is_read_only_when_it_is_the_culprit() -> None:
    offenders = []
    for entry in ENTRIES:
        entry_point = _topology(entry.app).entry_point
        if entry_point in entry.culprits or entry_point == entry.target:
            continue
        names = {v for label, op, v in MATCHER.findall(entry.probe.query) if label == "service_name"}
        if entry_point in names:
            offenders.append(entry.id)
    assert offenders == []


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e.heals_by_itself], ids=[e.id for e in ENTRIES if e.heals_by_itself]
)
def test_a_one_shot_probe_can_see_recovery_within_the_faults_life(entry: Entry) -> None:
    scale = {"s": 1, "m": 60, "h": 3600}
    ranges = [int(n) * scale[unit] for n, unit in RANGE.findall(entry.probe.query)]
    assert ranges, "a one-shot symptom is a change (a new pod, a restart): the probe needs a window"
    assert max(ranges) <= ONE_SHOT_MAX_RANGE_S


def test_the_check_catches_a_probe_at_the_entry_point() -> None:
    entry = load_catalog("online-boutique").by_id["ob-shipping-service-targetport"]
    query = (
        'sum(rate(traces_span_metrics_calls_total{namespace="$namespace", service_name="frontend",'
        ' span_name="GET /cart", span_kind="SPAN_KIND_SERVER"}[2m]))'
    )
    at_entry = entry.model_copy(update={"probe": entry.probe.model_copy(update={"query": query})})
    problems = scope_problems(at_entry)
    assert any("'frontend'" in p and "service_name" in p for p in problems), problems
    assert any("span_name" in p for p in problems), problems
