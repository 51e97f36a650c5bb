"""Chaos Mesh experiment status as the chaos controller reports it (the effects belong to the model)."""

from __future__ import annotations

from orchestrator.twin.controllers.workloads import object_key
from orchestrator.twin.resources import CHAOS_TYPES
from orchestrator.twin.selectors import selector_from_match
from orchestrator.twin.store import PODS, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339
from orchestrator.vocabulary.chaos import in_effect, paused


class ChaosStatusController:
    """Writes the status Chaos Mesh reports, so clients can wait for an experiment to be in place.

    Which pods an experiment affects, and how, is the application model's business; this controller only
    says whether the selector matches any pod and whether the experiment runs or has ended.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def sync(self, now: float) -> None:
        for rtype in CHAOS_TYPES:
            for chaos in self.store.list(rtype):
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
        annotations = chaos["metadata"].get("annotations")
        created = parse_rfc3339(chaos["metadata"]["creationTimestamp"])
        running = in_effect(spec=spec, annotations=annotations, created=created, now=now)
        flags = {
            "Selected": bool(matched),
            "AllInjected": running and bool(matched),
            "AllRecovered": not running,
            "Paused": paused(annotations),
        }
        conditions = []
        for kind, value in flags.items():
            text = "True" if value else "False"
            conditions.append({"type": kind, "status": text})
        return {
            "conditions": conditions,
            "experiment": {"desiredPhase": "Run" if running else "Stop"},
        }
