"""Chaos Mesh experiment status as the chaos controller reports it (the effects belong to the model)."""

from __future__ import annotations

from typing import Any

from orchestrator.twin.resources import CHAOS_GROUP, RESOURCE_TYPES
from orchestrator.twin.selectors import selector_from_match
from orchestrator.twin.store import PODS, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339
from orchestrator.twin.workloads import object_key

CHAOS_TYPES = tuple(r for r in RESOURCE_TYPES if r.group == CHAOS_GROUP)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_seconds(text: Any) -> float | None:
    """A Go duration (``30s``, ``5m``, ``1h30m``, ``500ms``) in seconds; None when absent or malformed."""
    if not isinstance(text, str) or not text:
        return None
    total, number = 0.0, ""
    index = 0
    while index < len(text):
        char = text[index]
        if char.isdigit() or char == ".":
            number += char
            index += 1
            continue
        unit = "ms" if text.startswith("ms", index) else char
        if unit not in _DURATION_UNITS or not number:
            return None
        total += float(number) * _DURATION_UNITS[unit]
        number = ""
        index += len(unit)
    return total if not number else None


class ChaosStatusController:
    """Writes the status Chaos Mesh reports, so clients can wait for an experiment to be in place.

    Which pods an experiment affects, and how, is the application model's business; this controller only
    says whether the selector matches any pod and whether the experiment runs or has ended.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def sync(self, now: float) -> None:
        for rtype in CHAOS_TYPES:
            for chaos in sorted(self.store.values(rtype), key=object_key):
                status = self._status(chaos, now)
                if status != chaos.get("status"):
                    self.store.put(rtype, {**chaos, "status": status})

    def _status(self, chaos: Obj, now: float) -> Obj:
        spec = chaos.get("spec") or {}
        selector = spec.get("selector") or {}
        namespaces = selector.get("namespaces") or [chaos["metadata"]["namespace"]]
        requirements = selector_from_match(
            {
                "matchLabels": selector.get("labelSelectors") or {},
                "matchExpressions": selector.get("expressionSelectors") or [],
            }
        )
        if selector.get("pods"):
            listed = {(ns, name) for ns, names in selector["pods"].items() for name in names}
            matched = [p for p in self.store.values(PODS) if object_key(p) in listed]
        else:
            matched = [p for ns in namespaces for p in self.store.list(PODS, ns, labels=requirements)]
        created = parse_rfc3339(chaos["metadata"]["creationTimestamp"])
        length = duration_seconds(spec.get("duration"))
        paused = (chaos["metadata"].get("annotations") or {}).get("experiment.chaos-mesh.org/pause") == "true"
        running = not paused and (length is None or now < created + length)
        flags = {
            "Selected": bool(matched),
            "AllInjected": running and bool(matched),
            "AllRecovered": not running,
            "Paused": paused,
        }
        conditions = []
        for kind, value in flags.items():
            text = "True" if value else "False"
            conditions.append({"type": kind, "status": text})
        return {
            "conditions": conditions,
            "experiment": {"desiredPhase": "Run" if running else "Stop"},
        }
