"""The chaos kinds a catalog entry may use: one row per kind says everything the rest of the code asks of it.

A kind is either a Chaos Mesh object (a CRD in ``chaos-mesh.org/v1alpha1``, created in the chaos namespace
and deleted to revert) or an action on pods or nodes carried out directly. The row gives the ``spec.action``
values Chaos Mesh accepts, what else its spec must hold, and the artifact kinds its faults may blame. Whether
a Chaos Mesh object is in effect at a given time is decided here too, once, as Chaos Mesh decides it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.vocabulary.quantities import go_duration_seconds

CHAOS_GROUP = "chaos-mesh.org"
CHAOS_VERSION = "v1alpha1"
CHAOS_API_VERSION = f"{CHAOS_GROUP}/{CHAOS_VERSION}"
PAUSE_ANNOTATION = "experiment.chaos-mesh.org/pause"
# How a Chaos Mesh selector narrows the pods it matches.
CHAOS_MODES = ("one", "all", "fixed", "fixed-percent", "random-max-percent")

Spec = Mapping[str, Any]


@dataclass(frozen=True)
class ChaosKind:
    name: str
    crd: bool  # a Chaos Mesh object; otherwise an action on pods or nodes
    artifacts: tuple[str, ...]  # the artifact kinds a fault of this kind may blame
    actions: tuple[str, ...] = ()  # the spec.action values Chaos Mesh accepts, in its order; () for none
    needs: Callable[[Spec], str | None] | None = None  # what else the spec must hold: the problem, or None

    @property
    def plural(self) -> str:
        """The resource name of a Chaos Mesh kind (``podchaos``)."""
        return self.name.lower()

    def spec_problem(self, spec: Spec) -> str | None:
        """What a catalog spec of this kind lacks, or None (no side effects)."""
        problem = self.needs(spec) if self.needs is not None else None
        action = spec.get("action")
        if problem is None and self.actions and action not in self.actions:
            allowed = ", ".join(sorted(self.actions))
            problem = f"{self.name} spec needs an 'action' ({allowed}), not {action!r}"
        return problem


def _stressors(spec: Spec) -> str | None:
    return None if "stressors" in spec else "StressChaos spec needs 'stressors'"


def _http_rule(spec: Spec) -> str | None:
    # HTTPChaos has no 'action': the fields present say what it does to matching requests.
    if not {"abort", "delay", "replace", "patch"} & set(spec) or "port" not in spec:
        return "HTTPChaos spec needs 'port' and one of abort, delay, replace, patch"
    return None


def _node(spec: Spec) -> str | None:
    return None if isinstance(spec.get("node"), str) else "drain-node spec needs the 'node' to drain"


def _zone(spec: Spec) -> str | None:
    # Without a zone, the zone its target runs in at injection: the active site's, whichever that is.
    zone = spec.get("zone")
    return None if zone is None or isinstance(zone, str) else "drain-zone spec's 'zone' names a zone"


CHAOS_KINDS: tuple[ChaosKind, ...] = (
    ChaosKind(
        "PodChaos", crd=True, artifacts=("pod",), actions=("pod-failure", "pod-kill", "container-kill")
    ),
    ChaosKind(
        "NetworkChaos",
        crd=True,
        artifacts=("network",),
        actions=("netem", "delay", "loss", "duplicate", "corrupt", "partition", "bandwidth"),
    ),
    ChaosKind("StressChaos", crd=True, artifacts=("cpu", "memory"), needs=_stressors),
    ChaosKind("DNSChaos", crd=True, artifacts=("dns",), actions=("error", "random")),
    ChaosKind(
        "IOChaos", crd=True, artifacts=("io",), actions=("latency", "fault", "attrOverride", "mistake")
    ),
    ChaosKind("HTTPChaos", crd=True, artifacts=("network",), needs=_http_rule),
    ChaosKind("terminate-pods", crd=False, artifacts=("pod",)),
    ChaosKind("drain-node", crd=False, artifacts=("node",), needs=_node),
    ChaosKind("drain-zone", crd=False, artifacts=("node",), needs=_zone),
)

CHAOS_KIND: dict[str, ChaosKind] = {kind.name: kind for kind in CHAOS_KINDS}
# The Chaos Mesh kinds, in the order a cluster with Chaos Mesh installed lists them.
CRD_KINDS: tuple[str, ...] = tuple(kind.name for kind in CHAOS_KINDS if kind.crd)
CHAOS_ARTIFACT_KINDS: frozenset[str] = frozenset(a for kind in CHAOS_KINDS for a in kind.artifacts)


def one_of(names: tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'``: how a closed list of choices is named in a validation message."""
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def paused(annotations: Mapping[str, str] | None) -> bool:
    """Whether a Chaos Mesh object is paused by its annotation."""
    return (annotations or {}).get(PAUSE_ANNOTATION) == "true"


def in_effect(*, spec: Spec, annotations: Mapping[str, str] | None, created: float, now: float) -> bool:
    """Whether a Chaos Mesh object acts at ``now``: from its creation until ``spec.duration`` has passed
    (forever without one), unless paused (no side effects)."""
    if paused(annotations):
        return False
    length = go_duration_seconds(spec.get("duration"))
    return now >= created and (length is None or now < created + length)
