"""The policy layer: whether one tool call may run, decided over its typed arguments.

Pure: no side effects, no I/O. ``decide`` sees the validated argument model of a call and a
``PolicyContext`` (what the application is, and how many mutations this invocation already made).

- forbidden: destructive or ground-truth-revealing requests an operator must never make: deleting a
  namespace or a Deployment (or a Secret), reading Secrets, touching the hidden namespaces (chaos,
  monitoring, orchestrator, registry) or the fault tooling's objects, mutating the load generator;
- denied: refused, but an honest mistake: an unknown service, flag or variant, a namespace other than the
  application's for a mutation, the per-invocation mutation and read limits, values out of bounds;
- allowed: everything else.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.interface import args as a
from orchestrator.interface.patterns import PatternError, compile_pattern
from orchestrator.vocabulary.quantities import parse_quantity

HIDDEN_NAMESPACES: frozenset[str] = frozenset({"chaos-mesh", "monitoring", "marathon", "marathon-registry"})
MUTATION_LIMIT = 10
READ_LIMIT = 200
MAX_REPLICAS = 10
CPU_BOUNDS = (0.01, 4.0)  # cores: 10m .. 4
MEMORY_BOUNDS = (16 * 2**20, 8 * 2**30)  # bytes: 16Mi .. 8Gi

# Names are runs of these characters; anything else ("/", ".", ":", spaces) separates a path or DNS name.
_SEPARATORS = re.compile(r"[^A-Za-z0-9_-]+")
# Argument fields of free text that name no object (what they say is no request to touch anything).
_FREE_TEXT = frozenset({"diff", "grep", "notes", "path", "query"})
_DESTROYED = frozenset({"namespace", "deployment", "secret", "node"})
_PROMQL_STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`'
# A label matcher (label, operator, quoted value) or any other string literal of a PromQL query.
_PROMQL_LITERALS = compile_pattern(
    rf"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*({_PROMQL_STRING})|({_PROMQL_STRING})"
)


@dataclass(frozen=True)
class PolicyContext:
    """What the policy needs to know about the application and the current invocation."""

    namespace: str
    workloads: frozenset[str]  # Deployments of the application an operator may act on
    loadgen: str | None = None
    flags: Mapping[str, frozenset[str]] = field(default_factory=dict)  # flag -> its variants
    nodes: frozenset[str] = frozenset()  # the cluster's nodes an operator may cordon or uncordon
    hidden_namespaces: frozenset[str] = HIDDEN_NAMESPACES
    mutations_done: int = 0
    mutation_limit: int = MUTATION_LIMIT
    reads_done: int = 0
    read_limit: int = READ_LIMIT


@dataclass(frozen=True)
class Decision:
    decision: Literal["allowed", "denied", "forbidden"]
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"


ALLOWED = Decision("allowed")


def _forbidden(reason: str) -> Decision:
    return Decision("forbidden", reason)


def _denied(reason: str) -> Decision:
    return Decision("denied", reason)


def decide(call: a.Args, ctx: PolicyContext) -> Decision:
    """Whether ``call`` may run in ``ctx`` (no side effects)."""
    screened = screen(call.model_dump(mode="json"), model=type(call), ctx=ctx)
    if screened is not None:
        return screened
    for check in (_hidden_namespace, _secrets, _destructive, _loadgen):
        verdict = check(call, ctx)
        if verdict is not None:
            return verdict
    if isinstance(call, a.MutateArgs):
        return _mutation(call, ctx)
    if isinstance(call, a.ServiceArgs) and call.service not in ctx.workloads | _set(ctx.loadgen):
        return _denied(f"unknown service {call.service!r}; services: {', '.join(sorted(ctx.workloads))}")
    if a.is_read(call) and ctx.reads_done >= ctx.read_limit:
        return _denied(f"the limit of {ctx.read_limit} reads per invocation is reached")
    return ALLOWED


def screen(raw: object, *, model: type[a.Args], ctx: PolicyContext) -> Decision | None:
    """Forbidden when the raw arguments of a read or a change (of tool arguments ``model``) reach for a
    hidden namespace, the fault tooling's objects or Secrets, whatever their shape; else None.

    Any key, and any string value outside free text, that names a hidden namespace alone or inside a path or
    DNS name ("chaos-mesh/x", "svc.monitoring.cluster"), a ``kind`` naming Chaos Mesh objects or Secrets
    however spelt, a destructive ``kind`` to delete, a PromQL query that selects a hidden namespace. Applied
    to the raw JSON before validation, so a malformed request that reaches for them is forbidden all the
    same; ``decide`` applies it to valid calls too. No side effects.
    """
    if issubclass(model, a.IncidentReportArgs) or not isinstance(raw, dict):
        return None  # a report touches nothing; arguments that are no object name nothing
    deletes = issubclass(model, a.DeleteResource)
    for key, value in raw.items():
        name = str(key)
        verdict = _hidden_names(name, ctx)
        if verdict is None and name == "kind" and isinstance(value, str):
            verdict = _kind(value, deletes=deletes)
        if verdict is None and name == "query" and isinstance(value, str):
            verdict = _query(value, ctx)
        if verdict is None and name not in _FREE_TEXT:
            verdict = _hidden_names(value, ctx)
        if verdict is not None:
            return verdict
    return None


def _hidden_token(text: str, ctx: PolicyContext) -> str | None:
    return next((t for t in _SEPARATORS.split(text) if t in ctx.hidden_namespaces), None)


def _hidden_names(value: object, ctx: PolicyContext) -> Decision | None:
    """Forbidden when a string or key anywhere inside ``value`` names a hidden namespace."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            hidden = _hidden_token(item, ctx)
            if hidden is not None:
                return _outside(hidden)
        elif isinstance(item, dict):
            stack.extend(str(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _outside(namespace: str) -> Decision:
    return _forbidden(f"namespace {namespace!r} is outside the application and not open to operators")


def _kind(text: str, *, deletes: bool) -> Decision | None:
    """Forbidden for a kind of the fault tooling, Secrets, or a kind that must not be deleted, however
    spelt ("Secret", "v1/secrets", "podchaos", "schedules.chaos-mesh.org")."""
    lowered = text.strip().lower()
    if "chaos" in lowered:
        return _forbidden(f"kind {text!r}: the fault tooling's objects are not open to operators")
    kind = lowered.rsplit("/", 1)[-1].split(".", 1)[0]
    kind = kind[:-1] if kind.endswith("s") else kind
    if deletes and kind in _DESTROYED:
        return _forbidden(f"deleting a {kind} is not allowed; only pods may be deleted (a restart)")
    if kind == "secret":
        return _forbidden("reading Secrets is not allowed")
    return None


def _promql_text(literal: str) -> str:
    body = literal[1:-1]
    if literal.startswith("`"):
        return body  # a raw string: no escapes
    try:  # PromQL unescapes as Go does; "chaos\x2dmesh" is the namespace chaos-mesh
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


def _query(query: str, ctx: PolicyContext) -> Decision | None:
    """Forbidden when a PromQL query selects a hidden namespace: a namespace label matched to one (``=``) or
    by a regular expression that matches one (``=~``), or any other string literal naming one. Matchers
    that exclude (``!=``, ``!~``) select every other namespace and are left to the answer's filter."""
    for match in _PROMQL_LITERALS.finditer(query):
        label, operator, quoted, bare = (match.group(i) for i in range(1, 5))
        text = _promql_text(quoted or bare or '""')
        if label is not None and "namespace" in label and operator in ("!=", "!~"):
            continue
        if label is not None and "namespace" in label and operator == "=~":
            try:
                selects = compile_pattern(text)
            except PatternError:
                continue  # Prometheus refuses the query itself
            hidden = next((n for n in sorted(ctx.hidden_namespaces) if selects.fullmatch(n)), None)
            if hidden is not None:
                return _outside(hidden)
        hidden = _hidden_token(text, ctx)
        if hidden is not None:
            return _outside(hidden)
    return None


def _set(name: str | None) -> frozenset[str]:
    return frozenset() if name is None else frozenset({name})


def _hidden_namespace(call: a.Args, ctx: PolicyContext) -> Decision | None:
    namespace = getattr(call, "namespace", None)
    if namespace in ctx.hidden_namespaces:
        return _forbidden(f"namespace {namespace!r} is outside the application and not open to operators")
    names_namespace = isinstance(call, a.GetResources | a.Describe) and call.kind == "namespaces"
    if names_namespace and getattr(call, "name", None) in ctx.hidden_namespaces:
        name = getattr(call, "name", None)
        return _forbidden(f"namespace {name!r} is outside the application and not open to operators")
    return None


def _secrets(call: a.Args, ctx: PolicyContext) -> Decision | None:
    del ctx
    if isinstance(call, a.GetResources | a.Describe) and call.kind == "secrets":
        return _forbidden("reading Secrets is not allowed")
    return None


def _destructive(call: a.Args, ctx: PolicyContext) -> Decision | None:
    del ctx
    if isinstance(call, a.DeleteResource) and call.kind in ("namespace", "deployment", "secret", "node"):
        return _forbidden(f"deleting a {call.kind} is not allowed; only pods may be deleted (a restart)")
    return None


def _owner_of_pod(pod: str, ctx: PolicyContext) -> str | None:
    # Pods are named <deployment>-<hash>-<suffix>; the longest matching workload name owns the pod.
    candidates = [w for w in ctx.workloads | _set(ctx.loadgen) if pod.startswith(f"{w}-")]
    return max(candidates, key=len) if candidates else None


def _loadgen(call: a.Args, ctx: PolicyContext) -> Decision | None:
    if ctx.loadgen is None or not isinstance(call, a.MutateArgs):
        return None
    target = getattr(call, "service", None)
    if isinstance(call, a.DeleteResource) and call.kind == "pod":
        target = _owner_of_pod(call.name, ctx)
    if target == ctx.loadgen:
        return _forbidden(f"the load generator {ctx.loadgen!r} is not part of the system under operation")
    return None


def _mutation(call: a.MutateArgs, ctx: PolicyContext) -> Decision:
    target = _target_check(call, ctx)
    if target is not None:
        return target
    if ctx.mutations_done >= ctx.mutation_limit:
        return _denied(f"the limit of {ctx.mutation_limit} changes per invocation is reached")
    return _bounds(call, ctx) or ALLOWED


def _target_check(call: a.MutateArgs, ctx: PolicyContext) -> Decision | None:
    if isinstance(call, a.DeleteResource):
        if call.namespace is not None and call.namespace != ctx.namespace:
            return _denied(f"changes are allowed only in namespace {ctx.namespace!r}")
        if call.kind != "pod":
            return _denied(f"deleting a {call.kind} is not supported; only pods may be deleted")
        if _owner_of_pod(call.name, ctx) is None:
            return _denied(f"pod {call.name!r} belongs to no workload of the application")
        return None
    if isinstance(call, a.UncordonNode):
        if call.node not in ctx.nodes:
            return _denied(f"unknown node {call.node!r}; nodes: {', '.join(sorted(ctx.nodes)) or 'none'}")
        unknown = sorted(set(call.services) - ctx.workloads)
        if unknown:
            return _denied(f"unknown service {unknown[0]!r}; services: {', '.join(sorted(ctx.workloads))}")
        return None
    if isinstance(call, a.SetFeatureFlag):
        if call.flag not in ctx.flags:
            known = ", ".join(sorted(ctx.flags)) or "none"
            return _denied(f"unknown feature flag {call.flag!r}; flags: {known}")
        if call.variant not in ctx.flags[call.flag]:
            variants = ", ".join(sorted(ctx.flags[call.flag]))
            return _denied(f"flag {call.flag!r} has no variant {call.variant!r}; variants: {variants}")
        return None
    service = getattr(call, "service", None)
    if service is not None and service not in ctx.workloads:
        return _denied(f"unknown service {service!r}; services: {', '.join(sorted(ctx.workloads))}")
    return None


def _bounds(call: a.MutateArgs, ctx: PolicyContext) -> Decision | None:
    del ctx
    if isinstance(call, a.ScaleService) and not 0 <= call.replicas <= MAX_REPLICAS:
        return _denied(f"replicas must be between 0 and {MAX_REPLICAS}, not {call.replicas}")
    if isinstance(call, a.UpdateService) and (call.target_port, call.port, call.selector) == (None,) * 3:
        return _denied("update_service needs at least one of target_port, port or selector")
    if isinstance(call, a.UpdateConfig):
        if not (call.env or call.resources or call.ports):
            return _denied("update_config needs at least one of env, resources or ports")
        for kind in ("limits", "requests"):
            quantities = getattr(call.resources, kind, None) if call.resources else None
            if quantities is None:
                continue
            for resource, (low, high), shown in (
                ("cpu", CPU_BOUNDS, "10m and 4"),
                ("memory", MEMORY_BOUNDS, "16Mi and 8Gi"),
            ):
                text = getattr(quantities, resource)
                if text is not None and not low <= parse_quantity(text) <= high:
                    return _denied(f"{kind}.{resource} must be between {shown}, not {text}")
    return None
