"""The policy layer: whether one tool call may run, decided over its typed arguments.

Pure: no side effects, no I/O. ``decide`` sees the validated argument model of a call and a
``PolicyContext`` (what the application is, and how many mutations this invocation already made).

- forbidden: destructive or ground-truth-revealing requests an operator must never make: deleting a
  namespace or a Deployment (or a Secret), reading Secrets, touching the hidden namespaces (chaos,
  monitoring, orchestrator, registry), mutating the load generator;
- denied: refused, but an honest mistake: an unknown service, flag or variant, a namespace other than the
  application's for a mutation, the per-invocation mutation and read limits, values out of bounds;
- allowed: everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.interface import args as a

HIDDEN_NAMESPACES: frozenset[str] = frozenset({"chaos-mesh", "monitoring", "marathon", "marathon-registry"})
MUTATION_LIMIT = 10
READ_LIMIT = 200
MAX_REPLICAS = 10
CPU_BOUNDS = (0.01, 4.0)  # cores: 10m .. 4
MEMORY_BOUNDS = (16 * 2**20, 8 * 2**30)  # bytes: 16Mi .. 8Gi

_SUFFIX = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")


@dataclass(frozen=True)
class PolicyContext:
    """What the policy needs to know about the application and the current invocation."""

    namespace: str
    workloads: frozenset[str]  # Deployments of the application an operator may act on
    loadgen: str | None = None
    flags: Mapping[str, frozenset[str]] = field(default_factory=dict)  # flag -> its variants
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


def parse_quantity(text: str) -> float:
    """A Kubernetes quantity as a plain number (cores or bytes); ``ValueError`` for anything else."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""]


def decide(call: a.Args, ctx: PolicyContext) -> Decision:
    """Whether ``call`` may run in ``ctx`` (no side effects)."""
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
