"""The statefulset controller: pods with stable names ``<set>-<ordinal>``, created in order and updated in
reverse order, each template kept as a ControllerRevision so ``kubectl rollout history|undo|status`` work.

Followed from upstream closely enough for those clients: with the default ``OrderedReady`` policy a pod is
created only when every lower ordinal is Running and Ready, and scaling down removes the highest ordinal
first, one at a time; ``Parallel`` creates and removes without waiting. A ``RollingUpdate`` deletes the
highest-ordinal pod that runs an older revision once every pod is Ready, down to ``partition``; ``OnDelete``
leaves replacing pods to whoever deletes them. The twin has no volumes, so ``volumeClaimTemplates`` are
kept on the object but create no claims.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.replicasets import DeletePod, pod_ready
from orchestrator.twin.controllers.workloads import (
    LAST_APPLIED,
    owned_by,
    owned_pod,
    owner_reference,
    template_hash,
)
from orchestrator.twin.store import CONTROLLER_REVISIONS, PODS, STATEFULSETS, Obj, Store

COMPONENT = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(set_name: str, pod: Obj) -> int | None:
    """The ordinal of a pod named ``<set_name>-<n>``; None for any other name."""
    name = str(pod["metadata"]["name"])
    prefix = f"{set_name}-"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


def revision_data(sts: Obj) -> Obj:
    """What a ControllerRevision of ``sts`` holds: a patch that puts its template back whole, as upstream
    stores it and ``kubectl rollout undo`` applies it."""
    template = copy.deepcopy(sts["spec"]["template"])
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


class StatefulSetController:
    def __init__(self, store: Store, events: EventRecorder, delete_pod: DeletePod) -> None:
        self.store = store
        self.events = events
        self.delete_pod = delete_pod
        self._reconciled = -1
        self._status_synced = -1

    # -- revisions --------------------------------------------------------------------------------
    def _revisions(self) -> dict[str, list[Obj]]:
        return owned_by(self.store, CONTROLLER_REVISIONS)

    def _update_revision(self, sts: Obj, owned: list[Obj]) -> Obj:
        """The revision of ``sts``'s current template, created (or renumbered to the newest) as needed."""
        data = revision_data(sts)
        newest = max((int(r.get("revision", 0)) for r in owned), default=0)
        for found in owned:
            if found.get("data") == data:
                if int(found.get("revision", 0)) < newest:  # rolled back to it: it is the newest again
                    found = self.store.put(CONTROLLER_REVISIONS, {**found, "revision": newest + 1})
                return found
        meta = sts["metadata"]
        selector = (sts["spec"].get("selector") or {}).get("matchLabels") or {}
        name = f"{meta['name']}-{template_hash(data)}"
        # The set's annotations go with the revision (a change cause among them), as upstream copies them.
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
        revision: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {**selector, REVISION_LABEL: name},
                **({"annotations": annotations} if annotations else {}),
                "ownerReferences": [owner_reference(sts)],
            },
            "data": data,
            "revision": newest + 1,
        }
        return self.store.create(CONTROLLER_REVISIONS, revision)

    # -- pods -------------------------------------------------------------------------------------
    def reconcile(self, now: float) -> None:
        if not self.store.changed_since(self._reconciled, PODS, STATEFULSETS, CONTROLLER_REVISIONS):
            return
        revisions = self._revisions()
        pods = owned_by(self.store, PODS)
        for sts in self.store.list(STATEFULSETS):
            uid = sts["metadata"]["uid"]
            update = self._update_revision(sts, revisions.get(uid, []))
            self._reconcile_set(sts, pods.get(uid, []), update, now)
        self._collect_revisions()
        self._reconciled = self.store.resource_version

    def _reconcile_set(self, sts: Obj, owned: list[Obj], update: Obj, now: float) -> None:
        spec = sts["spec"]
        name = sts["metadata"]["name"]
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        by_ordinal = {o: p for p in owned if (o := ordinal_of(name, p)) is not None}
        healthy = True  # every lower ordinal Running, Ready and not terminating
        for ordinal in range(replicas):
            pod = by_ordinal.get(ordinal)
            if pod is None:
                self._create_pod(sts, ordinal, update, now)
                healthy = False
            elif pod["metadata"].get("deletionTimestamp") or not pod_ready(pod):
                healthy = False
            if ordered and not healthy:
                return
        extra = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
        for ordinal in extra:
            pod = by_ordinal[ordinal]
            if not pod["metadata"].get("deletionTimestamp"):
                self._delete_pod(sts, pod, now)
            if ordered:
                return
        strategy = spec.get("updateStrategy") or {}
        if extra or strategy.get("type", "RollingUpdate") != "RollingUpdate" or not healthy:
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0))
        update_name = update["metadata"]["name"]
        for ordinal in range(replicas - 1, partition - 1, -1):
            pod = by_ordinal[ordinal]
            if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_name:
                self._delete_pod(sts, pod, now)  # recreated at the update revision once it is gone
                return

    def _create_pod(self, sts: Obj, ordinal: int, revision: Obj, now: float) -> None:
        meta = sts["metadata"]
        name = f"{meta['name']}-{ordinal}"
        template = {k: v for k, v in revision["data"]["spec"]["template"].items() if k != "$patch"}
        pod = owned_pod(sts, template, name=name)
        pod["metadata"]["labels"].update(
            {
                REVISION_LABEL: revision["metadata"]["name"],
                POD_NAME_LABEL: name,
                POD_INDEX_LABEL: str(ordinal),
            }
        )
        pod["spec"]["hostname"] = name
        if sts["spec"].get("serviceName"):
            pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
        self.store.create(PODS, pod)
        message = f"create Pod {name} in StatefulSet {meta['name']} successful"
        self._record(sts, "SuccessfulCreate", message, now)

    def _delete_pod(self, sts: Obj, pod: Obj, now: float) -> None:
        self.delete_pod(pod, now)
        message = f"delete Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} successful"
        self._record(sts, "SuccessfulDelete", message, now)

    def _record(self, sts: Obj, reason: str, message: str, now: float) -> None:
        self.events.record(involved=sts, reason=reason, now=now, component=COMPONENT, message=message)

    def _collect_revisions(self) -> None:
        """Keep ``revisionHistoryLimit`` revisions besides those pods run and the update revision."""
        sets = {s["metadata"]["uid"]: s for s in self.store.values(STATEFULSETS)}
        in_use = {
            str((p["metadata"].get("labels") or {}).get(REVISION_LABEL, "")) for p in self.store.values(PODS)
        }
        for uid, owned in self._revisions().items():
            sts = sets.get(uid)
            if sts is None:
                continue
            limit = int(sts["spec"].get("revisionHistoryLimit", 10))
            newest = max(int(r.get("revision", 0)) for r in owned)
            spare = [
                r
                for r in sorted(owned, key=lambda r: int(r.get("revision", 0)))
                if r["metadata"]["name"] not in in_use and int(r.get("revision", 0)) != newest
            ]
            for revision in spare[: max(len(spare) - limit, 0)]:
                meta = revision["metadata"]
                self.store.delete(CONTROLLER_REVISIONS, meta["namespace"], meta["name"])

    # -- status -----------------------------------------------------------------------------------
    def update_status(self, now: float) -> None:
        if not self.store.changed_since(self._status_synced, PODS, STATEFULSETS, CONTROLLER_REVISIONS):
            return
        revisions = self._revisions()
        pods = owned_by(self.store, PODS)
        for sts in self.store.list(STATEFULSETS):
            uid = sts["metadata"]["uid"]
            status = _status(sts, pods.get(uid, []), revisions.get(uid, []))
            if status != sts.get("status"):
                self.store.put(STATEFULSETS, {**sts, "status": status})
        self._status_synced = self.store.resource_version


def _status(sts: Obj, owned: list[Obj], revisions: list[Obj]) -> Obj:
    """The status upstream writes (no side effects): counts by revision, and the current revision moved to
    the update revision once every replica runs it and is Ready."""
    name = sts["metadata"]["name"]
    live = [
        p for p in owned if not p["metadata"].get("deletionTimestamp") and ordinal_of(name, p) is not None
    ]
    data = revision_data(sts)
    update = next((r["metadata"]["name"] for r in revisions if r.get("data") == data), "")
    old = sts.get("status") or {}
    current = str(old.get("currentRevision") or update)
    by_revision = [str((p["metadata"].get("labels") or {}).get(REVISION_LABEL, "")) for p in live]
    ready = sum(1 for p in live if pod_ready(p))
    replicas = int(sts["spec"].get("replicas", 1) if sts["spec"].get("replicas") is not None else 1)
    updated = by_revision.count(update)
    if updated == replicas == len(live) and ready == replicas:
        current = update
    status: dict[str, Any] = {
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "currentReplicas": by_revision.count(current),
        "updatedReplicas": updated,
        "currentRevision": current,
        "updateRevision": update,
        "collisionCount": 0,
        "availableReplicas": ready,
    }
    return status
