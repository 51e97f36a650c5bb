"""Chaos Mesh objects turned into effects on the simulated pods (no side effects anywhere here).

Each object acts until it is deleted, while ``orchestrator.vocabulary.chaos.in_effect`` says so: from its
creation until ``spec.duration`` has passed (or forever without one), unless paused. Selection modes (one,
all, fixed, fixed-percent, random-max-percent) choose pods by a hash of (object uid, pod name). As in Chaos
Mesh, the pods are chosen once, when the experiment is injected: only pods that existed at the object's
creation are eligible, the choice is recorded in ``Effects.selected`` and handed back on the next step, and
a pod created later (a restart, a rollout) is never touched by the experiment.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.twin.model.state import ChaosObject, PodView, Snapshot
from orchestrator.vocabulary.chaos import in_effect
from orchestrator.vocabulary.quantities import go_duration_seconds, quantity

_RATE_RE = re.compile(r"^([0-9.]+)\s*(bps|kbps|mbps|gbps|tbps)$", re.IGNORECASE)
_MANGLING = ("path", "body", "headers", "queries")
_RATE_UNITS = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}


@dataclass(frozen=True)
class NetRule:
    action: str  # delay | loss | partition | bandwidth | duplicate | corrupt
    source: frozenset[str]
    target: frozenset[str] | None
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    rate_bps: float = 0.0

    def touches(self, a: str, b: str) -> bool:
        """Whether a call between pods a and b crosses this rule (one round trip crosses both ways)."""
        if a in self.source and (self.target is None or b in self.target):
            return True
        return b in self.source and (self.target is None or a in self.target)


@dataclass(frozen=True)
class HttpFault:
    """An HTTPChaos rule on a server pod: matching requests are aborted, delayed or mangled."""

    abort: bool
    delay_s: float
    method: str | None
    path: str
    code: int | None  # replace.code: the server answers with this status
    mangled: bool  # replace/patch of path, body or headers: the request no longer means what it did

    def matches(self, op: str) -> bool:
        """Whether a served operation (``"GET /product/{id}"`` or a gRPC method) matches the rule."""
        method, _, path = op.partition(" ") if " " in op else ("POST", "", "/" + op)
        if self.method and self.method.upper() != method.upper():
            return False
        return fnmatch.fnmatch(path, self.path) or fnmatch.fnmatch(
            path.replace("{", "").replace("}", ""), self.path
        )


@dataclass
class Effects:
    net: list[NetRule] = field(default_factory=list)
    dns: list[tuple[frozenset[str], tuple[str, ...]]] = field(default_factory=list)
    stress_cpu: dict[str, float] = field(default_factory=dict)  # pod -> cores burnt
    stress_memory: dict[str, float] = field(default_factory=dict)  # pod -> bytes held
    io: dict[str, tuple[float, float, bool]] = field(default_factory=dict)  # pod -> (delay s, share, fault)
    http: dict[str, list[HttpFault]] = field(default_factory=dict)  # pod -> rules
    failing: set[str] = field(default_factory=set)  # pod-failure
    container_kills: list[tuple[frozenset[str], tuple[str, ...], float]] = field(default_factory=list)
    pod_kills: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (object uid, pods)
    # Selection key (object uid, "/target" for a NetworkChaos target) -> the pod names injected.
    selected: dict[str, frozenset[str]] = field(default_factory=dict)

    def dns_fails(self, pod: str, host: str) -> bool:
        return any(pod in pods and _dns_match(host, patterns) for pods, patterns in self.dns)


def _dns_match(host: str, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return True
    # Resolvers ask for the FQDN (search domains expanded): patterns match it or its first label.
    return any(fnmatch.fnmatch(host, p) or fnmatch.fnmatch(host.split(".")[0], p) for p in patterns)


def _pick(uid: str, pods: list[PodView], mode: str, value: Any) -> list[PodView]:
    ranked = sorted(pods, key=lambda p: hashlib.sha256(f"{uid}/{p.name}".encode()).hexdigest())
    if mode == "all" or not ranked:
        return ranked
    count = 1
    try:
        number = float(value) if value is not None else 1.0
    except (TypeError, ValueError):
        number = 1.0
    if mode == "fixed":
        count = int(number)
    elif mode in ("fixed-percent", "random-max-percent"):
        count = max(1, math.floor(len(ranked) * number / 100.0))
    return ranked[: max(0, count)]


def select(
    selector: Mapping[str, Any] | None,
    shot: Snapshot,
    *,
    default_namespace: str,
    uid: str,
    mode: str = "all",
    value: Any = None,
) -> list[PodView]:
    """Pods of the snapshot a Chaos Mesh selector picks (namespaces, labelSelectors, pods), by mode."""
    sel = selector or {}
    namespaces = sel.get("namespaces") or [default_namespace]
    if shot.namespace not in namespaces:
        return []
    labels = sel.get("labelSelectors") or {}
    named = (sel.get("pods") or {}).get(shot.namespace)
    chosen = [
        p
        for p in shot.all_pods()
        if not p.deleting
        and all(p.labels.get(k) == v for k, v in labels.items())
        and (named is None or p.name in named)
    ]
    return _pick(uid, chosen, mode, value)


def _names(pods: Iterable[PodView]) -> frozenset[str]:
    return frozenset(p.name for p in pods)


@dataclass(frozen=True)
class _Selection:
    """The pods an experiment was injected into: recorded once, then only looked up."""

    shot: Snapshot
    recorded: Mapping[str, frozenset[str]]
    found: Effects

    def pods(self, obj: ChaosObject, part: Mapping[str, Any], *, key: str, ns: str) -> list[PodView]:
        names = self.recorded.get(key)
        if names is None:
            # Injection: the selector is evaluated over the pods alive when the object was created.
            existing = Snapshot(namespace=self.shot.namespace, now=self.shot.now)
            for workload, pods in self.shot.pods.items():
                existing.pods[workload] = [p for p in pods if p.created <= obj.created]
            names = _names(
                select(
                    part.get("selector"),
                    existing,
                    default_namespace=ns,
                    uid=key,
                    mode=str(part.get("mode", "all")),
                    value=part.get("value"),
                )
            )
        self.found.selected[key] = names
        return [p for p in self.shot.all_pods() if p.name in names and not p.deleting]


def _network(obj: ChaosObject, chosen: _Selection, ns: str) -> NetRule | None:
    spec = obj.spec
    source = _names(chosen.pods(obj, spec, key=obj.uid, ns=ns))
    target: frozenset[str] | None = None
    if spec.get("target"):
        target = _names(chosen.pods(obj, spec["target"], key=obj.uid + "/target", ns=ns))
    action = str(spec.get("action", ""))
    if action == "delay":
        delay = spec.get("delay") or {}
        return NetRule(
            action,
            source,
            target,
            delay_ms=1000 * (go_duration_seconds(delay.get("latency")) or 0),
            jitter_ms=1000 * (go_duration_seconds(delay.get("jitter")) or 0),
        )
    if action == "loss":
        share = float(str((spec.get("loss") or {}).get("loss", "0")).rstrip("%") or 0) / 100.0
        return NetRule(action, source, target, loss=min(1.0, share))
    if action == "bandwidth":
        match = _RATE_RE.match(str((spec.get("bandwidth") or {}).get("rate", "")))
        rate = float(match.group(1)) * _RATE_UNITS[match.group(2).lower()] if match else 1e6
        return NetRule(action, source, target, rate_bps=rate)
    if action in ("partition", "duplicate", "corrupt"):
        loss = float(str((spec.get(action) or {}).get(action, "0")).rstrip("%") or 0) / 100.0
        return NetRule(action, source, target, loss=loss)
    return None


def _pod_chaos(obj: ChaosObject, pods: list[PodView], found: Effects) -> None:
    action = str(obj.spec.get("action", ""))
    if action == "pod-kill":
        found.pod_kills.append((obj.uid, tuple(p.name for p in pods)))
    elif action == "pod-failure":
        found.failing.update(p.name for p in pods)
    elif action == "container-kill":
        names = tuple(obj.spec.get("containerNames") or ())
        found.container_kills.append((_names(pods), names, obj.created))


def _stress(obj: ChaosObject, pods: list[PodView], found: Effects) -> None:
    stressors = obj.spec.get("stressors") or {}
    cpu = stressors.get("cpu") or {}
    memory = stressors.get("memory") or {}
    for pod in pods:
        if cpu:
            cores = float(cpu.get("workers", 1)) * float(cpu.get("load", 100)) / 100.0
            found.stress_cpu[pod.name] = found.stress_cpu.get(pod.name, 0.0) + cores
        if memory:
            size = str(memory.get("size", "256MB"))
            if size.endswith("%"):
                spec = pod.containers[0] if pod.containers else None
                limit = (spec.memory_limit if spec else None) or 512 * 1024**2
                held = limit * float(size[:-1]) / 100.0
            else:
                held = _stress_size(size)
            workers = float(memory.get("workers", 1))
            found.stress_memory[pod.name] = found.stress_memory.get(pod.name, 0.0) + held * workers


def _stress_size(size: str) -> float:
    """A StressChaos memory size (``256MB``, ``1GiB``, ``512KB``) in bytes; 0 when unreadable."""
    text = size.replace("B", "")
    return quantity(text[:-1] + "k" if text.endswith("K") else text) or 0.0


def _dns(obj: ChaosObject, pods: list[PodView], found: Effects) -> None:
    found.dns.append((_names(pods), tuple(str(p) for p in obj.spec.get("patterns") or ())))


def _io(obj: ChaosObject, pods: list[PodView], found: Effects) -> None:
    share = float(obj.spec.get("percent", 100)) / 100.0
    delay = go_duration_seconds(obj.spec.get("delay")) or 0.0
    for pod in pods:
        found.io[pod.name] = (delay, share, obj.spec.get("action") == "fault")


def _http(obj: ChaosObject, pods: list[PodView], found: Effects) -> None:
    spec = obj.spec
    replace = spec.get("replace") or {}
    code = replace.get("code")
    rule = HttpFault(
        abort=bool(spec.get("abort")) or spec.get("action") == "abort",
        delay_s=go_duration_seconds(spec.get("delay")) or 0.0,
        method=str(spec["method"]) if spec.get("method") else None,
        path=str(spec.get("path") or "*"),
        code=int(code) if code is not None else None,
        mangled=bool(spec.get("patch")) or any(k in replace for k in _MANGLING),
    )
    for pod in pods:
        found.http.setdefault(pod.name, []).append(rule)


# What each Chaos Mesh kind does to the pods it selected; NetworkChaos selects two sides, so it is apart.
_POD_EFFECTS: dict[str, Callable[[ChaosObject, list[PodView], Effects], None]] = {
    "PodChaos": _pod_chaos,
    "StressChaos": _stress,
    "DNSChaos": _dns,
    "IOChaos": _io,
    "HTTPChaos": _http,
}
SIMULATED_KINDS = frozenset({"NetworkChaos", *_POD_EFFECTS})


def effects(shot: Snapshot, recorded: Mapping[str, frozenset[str]] | None = None) -> Effects:
    """Every active chaos effect on the snapshot's pods (no side effects).

    ``recorded`` is the previous step's ``Effects.selected``: experiments already injected keep the pods
    they chose then; without it, each object's choice is rebuilt from the pods older than the object.
    """
    found = Effects()
    chosen = _Selection(shot=shot, recorded=recorded or {}, found=found)
    for obj in shot.chaos:
        if not in_effect(spec=obj.spec, annotations=obj.annotations, created=obj.created, now=shot.now):
            continue
        ns = obj.namespace or shot.namespace
        if obj.kind == "NetworkChaos":
            rule = _network(obj, chosen, ns)
            if rule is not None:
                found.net.append(rule)
            continue
        pods = chosen.pods(obj, obj.spec, key=obj.uid, ns=ns)
        effect = _POD_EFFECTS.get(obj.kind)
        if effect is not None:
            effect(obj, pods, found)
    return found
