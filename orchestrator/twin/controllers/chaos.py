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
        # Whether each experiment's selector matched a pod, by (plural, namespace, name), with the
        # experiment's resourceVersion and the pods' last change it was worked out at: only a change of
        # either can change it, and most steps change neither.
        self._selected: dict[tuple[str, str, str], tuple[str, int, bool]] = {}

    def sync(self, now: float) -> None:
        pods_at = self.store.last_change.get((PODS.group, PODS.plural), 0)
        selected: dict[tuple[str, str, str], tuple[str, int, bool]] = {}
        for rtype in CHAOS_TYPES:
            for chaos in self.store.list(rtype):
                key = (rtype.plural, *object_key(chaos))
                version = chaos["metadata"]["resourceVersion"]
                known = self._selected.get(key)
                if known is not None and known[0] == version and known[1] == pods_at:
                    matches = known[2]
                else:
                    matches = self.selects_any(chaos)
                status = self._status(chaos, now, selected=matches)
                if status != chaos.get("status"):
                    written = self.store.put(rtype, {**chaos, "status": status})
                    version = written["metadata"]["resourceVersion"]  # a status write keeps the selector
                selected[key] = (version, pods_at, matches)
        self._selected = selected

    def selects_any(self, chaos: Obj) -> bool:
        """Whether the experiment's selector matches any pod now (no side effects)."""
        selector = (chaos.get("spec") or {}).get("selector") or {}
        namespaces = selector.get("namespaces") or [chaos["metadata"]["namespace"]]
        requirements = selector_from_match(
            {
                "matchLabels": selector.get("labelSelectors") or {},
                "matchExpressions": selector.get("expressionSelectors") or [],
            }
        )
        if selector.get("pods"):
            listed = {(ns, name) for ns, names in selector["pods"].items() for name in names}
            return any(object_key(p) in listed for p in self.store.values(PODS))
        return any(self.store.list(PODS, ns, labels=requirements) for ns in namespaces)

    def _status(self, chaos: Obj, now: float, *, selected: bool) -> Obj:
        spec = chaos.get("spec") or {}
        annotations = chaos["metadata"].get("annotations")
        created = parse_rfc3339(chaos["metadata"]["creationTimestamp"])
        running = in_effect(spec=spec, annotations=annotations, created=created, now=now)
        flags = {
            "Selected": selected,
            "AllInjected": running and selected,
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
