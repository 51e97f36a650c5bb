"""The deployment controller and the garbage collector, run once per simulated step.

They follow the upstream algorithms closely enough that ``kubectl rollout status|history|undo`` read the
same story a real cluster tells: a ReplicaSet per template (pod-template-hash, revision annotations),
rolling updates bounded by maxSurge/maxUnavailable, Available/Progressing conditions.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.workloads import (
    DESIRED,
    HASH_LABEL,
    MAX_REPLICAS,
    NOT_COPIED,
    REVISION,
    REVISION_HISTORY,
    SETTLED,
    condition,
    controller_uid,
    deployment_status,
    ordered,
    owned_by,
    owner_reference,
    revision,
    status_count,
    surge_of,
    template_hash,
    unavailable_of,
    without_hash,
)
from orchestrator.twin.store import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    DEPLOYMENTS,
    JOBS,
    PODS,
    REPLICASETS,
    REPLICATION_CONTROLLERS,
    STATEFULSETS,
    Obj,
    Store,
)
from orchestrator.twin.timefmt import parse_rfc3339


class WorkloadControllers:
    """Deployment and ReplicaSet reconciliation plus owner-reference garbage collection."""

    def __init__(self, store: Store, events: EventRecorder) -> None:
        self.store = store
        self.events = events
        self._seen_deletions = -1
        self._reconciled = -1
        self._status_synced = -1
        self._in_progress = True  # some rollout may still reach its progress deadline as time passes
        self._reconcile_inputs: dict[str, tuple[str, ...]] = {}
        self._settled_inputs: dict[str, tuple[str, ...]] = {}
        # Deployments still progressing whose last status pass wrote nothing: the inputs it read, and when
        # its Progressing condition was last updated (seconds) with its deadline. Until a step passes that
        # deadline, the same inputs give the same status again (see ``update_deployment_status``).
        self._steady: dict[str, tuple[tuple[str, ...], float, int]] = {}

    # -- garbage collector ------------------------------------------------------------------------
    def collect_garbage(self, now: float, delete_pod: Any) -> None:
        """Delete dependents whose controller is gone (background propagation); only after deletions."""
        if self.store.deletions == self._seen_deletions:
            return
        self._seen_deletions = self.store.deletions
        # A ReplicaSet's controller is a Deployment; a ControllerRevision's a StatefulSet.
        for owners, kind in ((DEPLOYMENTS, REPLICASETS), (STATEFULSETS, CONTROLLER_REVISIONS)):
            alive = {o["metadata"]["uid"] for o in self.store.values(owners)}
            for dependent in self.store.list(kind):
                owner = controller_uid(dependent)
                if owner is not None and owner not in alive:
                    meta = dependent["metadata"]
                    self.store.delete(kind, meta["namespace"], meta["name"])
        # A pod's controller is a ReplicaSet, a Job, a ReplicationController, a DaemonSet or a StatefulSet.
        alive_owners = {
            o["metadata"]["uid"]
            for kind in (REPLICASETS, JOBS, REPLICATION_CONTROLLERS, DAEMONSETS, STATEFULSETS)
            for o in self.store.values(kind)
        }
        for pod in self.store.list(PODS):
            owner = controller_uid(pod)
            deleting = pod["metadata"].get("deletionTimestamp")
            if owner is not None and owner not in alive_owners and not deleting:
                delete_pod(pod, now)
        self._seen_deletions = self.store.deletions

    # -- deployments ------------------------------------------------------------------------------
    def reconcile_deployments(self, now: float) -> None:
        if not self.store.changed_since(self._reconciled, DEPLOYMENTS, REPLICASETS):
            return
        by_owner = owned_by(self.store, REPLICASETS)
        for deployment in self.store.list(DEPLOYMENTS):
            owned = by_owner.get(deployment["metadata"]["uid"], [])
            # Reconciling is a function of the deployment and its ReplicaSets: unchanged inputs, no work.
            if self._reconcile_inputs.get(deployment["metadata"]["uid"]) != _inputs(deployment, owned):
                self._reconcile_deployment(deployment, owned, now)
        by_owner = owned_by(self.store, REPLICASETS)
        self._reconcile_inputs = {
            d["metadata"]["uid"]: _inputs(d, by_owner.get(d["metadata"]["uid"], []))
            for d in self.store.values(DEPLOYMENTS)
        }
        self._reconciled = self.store.resource_version

    def _reconcile_deployment(self, deployment: Obj, owned: list[Obj], now: float) -> None:
        spec = deployment["spec"]
        replicas = int(spec.get("replicas", 1))
        owned = sorted(owned, key=lambda r: (revision(r), r["metadata"]["name"]))
        template = spec["template"]
        new_rs = next((r for r in owned if without_hash(r["spec"]["template"]) == template), None)
        max_revision = max((revision(r) for r in owned), default=0)
        surge = surge_of(spec, replicas)
        if new_rs is None and not spec.get("paused"):
            new_rs = self._create_replicaset(deployment, max_revision + 1, replicas, surge, now)
            owned.append(new_rs)
        elif new_rs is not None and revision(new_rs) < max_revision:
            new_rs = self._bump_revision(deployment, new_rs, max_revision + 1, surge)
        new_uid = new_rs["metadata"]["uid"] if new_rs is not None else None
        old = [r for r in owned if r["metadata"]["uid"] != new_uid]  # by uid: new_rs may be a newer version
        if new_rs is not None and not spec.get("paused"):
            if (spec.get("strategy") or {}).get("type") == "Recreate":
                self._recreate(deployment, new_rs, old, replicas, now)
            else:
                new_rs = self._roll(deployment, new_rs, old, replicas, now)
        self._sync_revision_annotation(deployment, new_rs)
        self._clean_history(deployment, old)

    def _create_replicaset(self, deployment: Obj, rev: int, replicas: int, surge: int, now: float) -> Obj:
        meta = deployment["metadata"]
        template = json.loads(json.dumps(deployment["spec"]["template"]))
        collisions = int((deployment.get("status") or {}).get("collisionCount", 0))
        digest = template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = digest
        selector = json.loads(json.dumps(deployment["spec"]["selector"]))
        selector.setdefault("matchLabels", {})[HASH_LABEL] = digest
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in NOT_COPIED}
        annotations.update({DESIRED: str(replicas), MAX_REPLICAS: str(replicas + surge), REVISION: str(rev)})
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{digest}",
                "namespace": meta["namespace"],
                "labels": dict(template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_reference(deployment)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": deployment["spec"].get("minReadySeconds", 0),
                "selector": selector,
                "template": template,
            },
        }
        created = self.store.create(REPLICASETS, rs)
        self._set_progressing(
            deployment,
            "NewReplicaSetCreated",
            f'Created new replica set "{created["metadata"]["name"]}"',
            now,
        )
        return created

    def _bump_revision(self, deployment: Obj, rs: Obj, rev: int, surge: int) -> Obj:
        annotations = dict(rs["metadata"].get("annotations") or {})
        history = [h for h in annotations.get(REVISION_HISTORY, "").split(",") if h]
        history.append(annotations.get(REVISION, "0"))
        copied = {
            k: v for k, v in (deployment["metadata"].get("annotations") or {}).items() if k not in NOT_COPIED
        }
        annotations.update(copied)
        replicas = int(deployment["spec"].get("replicas", 1))
        annotations.update(
            {
                REVISION: str(rev),
                REVISION_HISTORY: ",".join(history),
                DESIRED: str(replicas),
                MAX_REPLICAS: str(replicas + surge),
            }
        )
        return self.store.put(REPLICASETS, {**rs, "metadata": {**rs["metadata"], "annotations": annotations}})

    def scale_replicaset(self, deployment: Obj, rs: Obj, count: int, now: float) -> Obj:
        before = int(rs["spec"].get("replicas", 0))
        if before == count:
            return rs
        replicas = int(deployment["spec"].get("replicas", 1))
        annotations = dict(rs["metadata"].get("annotations") or {})
        annotations[DESIRED] = str(replicas)
        annotations[MAX_REPLICAS] = str(replicas + surge_of(deployment["spec"], replicas))
        updated = self.store.put(
            REPLICASETS,
            {
                **rs,
                "metadata": {**rs["metadata"], "annotations": annotations},
                "spec": {**rs["spec"], "replicas": count},
            },
        )
        verb = "up" if count > before else "down"
        self.events.record(
            involved=deployment,
            reason="ScalingReplicaSet",
            now=now,
            component="deployment-controller",
            message=f"Scaled {verb} replica set {rs['metadata']['name']} from {before} to {count}",
        )
        return updated

    def _roll(self, deployment: Obj, new_rs: Obj, old: list[Obj], replicas: int, now: float) -> Obj:
        spec = deployment["spec"]
        surge = surge_of(spec, replicas)
        unavailable = unavailable_of(spec, replicas, surge)
        active_old = [r for r in old if r["spec"].get("replicas", 0) > 0]
        if not active_old:
            # A scaling event, or a finished rollout: the only active ReplicaSet follows spec.replicas.
            return self.scale_replicaset(deployment, new_rs, replicas, now)
        current = sum(int(r["spec"].get("replicas", 0)) for r in [new_rs, *old])
        new_count = int(new_rs["spec"].get("replicas", 0))
        if new_count < replicas:
            room = replicas + surge - current
            if room > 0:
                new_rs = self.scale_replicaset(
                    deployment, new_rs, new_count + min(room, replicas - new_count), now
                )
        elif new_count > replicas:
            new_rs = self.scale_replicaset(deployment, new_rs, replicas, now)
        self._scale_down_old(deployment, new_rs, old, replicas, unavailable, now)
        return new_rs

    def _scale_down_old(
        self, deployment: Obj, new_rs: Obj, old: list[Obj], replicas: int, unavailable: int, now: float
    ) -> None:
        old = sorted(old, key=lambda r: (r["metadata"]["creationTimestamp"], r["metadata"]["name"]))
        every = [new_rs, *old]
        all_count = sum(int(r["spec"].get("replicas", 0)) for r in every)
        min_available = replicas - unavailable
        new_unavailable = int(new_rs["spec"].get("replicas", 0)) - status_count(new_rs, "availableReplicas")
        budget = all_count - min_available - new_unavailable
        if budget <= 0:
            return
        done = 0
        scaled: dict[str, Obj] = {}
        for rs in old:  # first the unhealthy replicas of old sets: removing them costs no availability
            count = int(rs["spec"].get("replicas", 0))
            available = status_count(rs, "availableReplicas")
            if done >= budget or count == 0 or count <= available:
                continue
            cut = min(budget - done, count - available)
            scaled[rs["metadata"]["uid"]] = self.scale_replicaset(deployment, rs, count - cut, now)
            done += cut
        available_total = sum(status_count(r, "availableReplicas") for r in every)
        total_cut = available_total - min_available
        cut_so_far = 0
        for original in old:
            rs = scaled.get(original["metadata"]["uid"], original)
            count = int(rs["spec"].get("replicas", 0))
            if cut_so_far >= total_cut:
                break
            if count == 0:
                continue
            cut = min(count, total_cut - cut_so_far)
            self.scale_replicaset(deployment, rs, count - cut, now)
            cut_so_far += cut

    def _recreate(self, deployment: Obj, new_rs: Obj, old: list[Obj], replicas: int, now: float) -> None:
        running_old = False
        for rs in old:
            if int(rs["spec"].get("replicas", 0)) > 0:
                self.scale_replicaset(deployment, rs, 0, now)
                running_old = True
            elif status_count(rs, "replicas") > 0:
                running_old = True
        if not running_old:
            self.scale_replicaset(deployment, new_rs, replicas, now)

    def _sync_revision_annotation(self, deployment: Obj, new_rs: Obj | None) -> None:
        if new_rs is None:
            return
        annotations = deployment["metadata"].get("annotations") or {}
        wanted = str(revision(new_rs))
        if annotations.get(REVISION) != wanted:
            current = self.store.get(
                DEPLOYMENTS, deployment["metadata"]["namespace"], deployment["metadata"]["name"]
            )
            meta = {
                **current["metadata"],
                "annotations": {**(current["metadata"].get("annotations") or {}), REVISION: wanted},
            }
            self.store.put(DEPLOYMENTS, {**current, "metadata": meta})

    def _clean_history(self, deployment: Obj, old: list[Obj]) -> None:
        limit = int(deployment["spec"].get("revisionHistoryLimit", 10))
        idle = [self.store.find(REPLICASETS, r["metadata"]["namespace"], r["metadata"]["name"]) for r in old]
        removable = sorted(
            (
                r
                for r in idle
                if r is not None and r["spec"].get("replicas", 0) == 0 and status_count(r, "replicas") == 0
            ),
            key=revision,
        )
        for rs in removable[: max(0, len(removable) - limit)]:
            self.store.delete(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"])

    def _set_progressing(self, deployment: Obj, reason: str, message: str, now: float) -> None:
        current = self.store.get(
            DEPLOYMENTS, deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        )
        status = dict(current.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c["type"] != "Progressing"]
        old = next((c for c in status.get("conditions") or [] if c["type"] == "Progressing"), None)
        conditions.append(condition("Progressing", "True", reason, message, now, old))
        status["conditions"] = ordered(conditions)
        self.store.put(DEPLOYMENTS, {**current, "status": status})

    def update_deployment_status(self, now: float) -> None:
        if not self._in_progress and not self.store.changed_since(
            self._status_synced, DEPLOYMENTS, REPLICASETS
        ):
            return
        by_owner = owned_by(self.store, REPLICASETS)
        in_progress = False
        settled: dict[str, tuple[str, ...]] = {}
        steady: dict[str, tuple[tuple[str, ...], float, int]] = {}
        for deployment in self.store.list(DEPLOYMENTS):
            uid = deployment["metadata"]["uid"]
            owned = by_owner.get(uid, [])
            inputs = _inputs(deployment, owned)
            if self._settled_inputs.get(uid) == inputs:
                settled[uid] = inputs  # settled and unchanged: its status cannot have moved
                continue
            kept = self._steady.get(uid)
            if kept is not None and kept[0] == inputs and not now - kept[1] > kept[2]:
                steady[uid] = kept  # progressing, unchanged and within its deadline: the same status again
                in_progress = True
                continue
            status = deployment_status(deployment, owned, now)
            written = status != deployment.get("status")
            if written:
                deployment = self.store.put(DEPLOYMENTS, {**deployment, "status": status})
            progressing = next((c for c in status["conditions"] if c["type"] == "Progressing"), None)
            if progressing is not None and progressing.get("reason") not in SETTLED:
                in_progress = True
                updated = progressing.get("lastUpdateTime")
                if not written and updated:
                    deadline = int(deployment["spec"].get("progressDeadlineSeconds", 600))
                    steady[uid] = (inputs, parse_rfc3339(updated), deadline)
            else:
                settled[uid] = _inputs(deployment, owned)
        self._settled_inputs = settled
        self._steady = steady
        self._in_progress = in_progress
        self._status_synced = self.store.resource_version


def _inputs(deployment: Obj, owned: list[Obj]) -> tuple[str, ...]:
    """The versions a deployment's reconciliation and status depend on."""
    return (
        deployment["metadata"]["resourceVersion"],
        *sorted(r["metadata"]["resourceVersion"] for r in owned),
    )
