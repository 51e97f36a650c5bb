"""What the workload controllers share: ownership, template hashes, revisions, rollout bounds, and the
deployment status with its Available/Progressing conditions (all pure: no side effects)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from orchestrator.twin.resources import ResourceType
from orchestrator.twin.store import PODS, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339, rfc3339

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NOT_COPIED = {
    LAST_APPLIED,
    REVISION,
    REVISION_HISTORY,
    DESIRED,
    MAX_REPLICAS,
}
SAFE = "bcdfghjklmnpqrstvwxz2456789"
SETTLED = ("NewReplicaSetAvailable", "ProgressDeadlineExceeded")


def controller_uid(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def owner_reference(owner: Obj) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def create_owned_pod(store: Store, owner: Obj, *, node: str | None = None) -> str:
    """Create a pod from ``owner``'s template, named after it with a random suffix, owned by it (and bound to
    ``node`` when given, as a DaemonSet's pods are); returns its name. Side effects: the store."""
    owner_meta = owner["metadata"]
    name = f"{owner_meta['name']}-{store.random_suffix()}"
    while store.find(PODS, owner_meta["namespace"], name) is not None:
        name = f"{owner_meta['name']}-{store.random_suffix()}"
    pod = owned_pod(owner, owner["spec"]["template"], name=name, generate_name=f"{owner_meta['name']}-")
    if node is not None:
        pod["spec"] = {**pod["spec"], "nodeName": node}
    store.create(PODS, pod)
    return name


def owned_pod(owner: Obj, template: Obj, *, name: str, generate_name: str | None = None) -> Obj:
    """A pod named ``name`` made from a copy of ``template`` (its labels, annotations and spec) and owned by
    ``owner`` (no side effects)."""
    template = json.loads(json.dumps(template))
    meta = template.get("metadata") or {}
    pod_meta: Obj = {"name": name}
    if generate_name is not None:
        pod_meta["generateName"] = generate_name
    pod_meta.update(
        {
            "namespace": owner["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "ownerReferences": [owner_reference(owner)],
        }
    )
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}


def template_hash(template: Obj, collisions: int = 0) -> str:
    """pod-template-hash: FNV-1a of the template, encoded with the API server's safe alphabet."""
    digest = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    if collisions:
        for byte in str(collisions).encode():
            digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE[ord(c) % len(SAFE)] for c in str(digest))


def without_hash(template: Obj) -> Obj:
    labels = (template.get("metadata") or {}).get("labels") or {}
    if HASH_LABEL not in labels:
        return template
    rest = {k: v for k, v in labels.items() if k != HASH_LABEL}
    return {**template, "metadata": {**template["metadata"], "labels": rest}}


def revision(obj: Obj) -> int:
    try:
        return int((obj["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def resolve_fraction(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString like ``25%`` or ``1`` against ``total``, rounded as upstream rounds each bound."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = total * float(value[:-1]) / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value) if value is not None else 0


def condition(kind: str, status: str, reason: str, message: str, now: float, old: Obj | None) -> Obj:
    """A condition that keeps its transition time while its status holds, as controllers do."""
    stamp = rfc3339(now)
    transition = old["lastTransitionTime"] if old and old.get("status") == status else stamp
    update = stamp
    if old and old.get("status") == status and old.get("reason") == reason and old.get("message") == message:
        update = old.get("lastUpdateTime", stamp)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": update,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }


def surge_of(spec: Obj, replicas: int) -> int:
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    return resolve_fraction(rolling.get("maxSurge", "25%"), replicas, round_up=True)


def unavailable_of(spec: Obj, replicas: int, surge: int) -> int:
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    unavailable = resolve_fraction(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    return 1 if unavailable == 0 and surge == 0 else min(unavailable, replicas)


def deployment_status(deployment: Obj, owned: list[Obj], now: float) -> Obj:
    """The status the deployment controller writes, conditions included (no side effects)."""
    spec = deployment["spec"]
    replicas = int(spec.get("replicas", 1))
    template = spec["template"]
    new_rs = next((r for r in owned if without_hash(r["spec"]["template"]) == template), None)
    old_status = deployment.get("status") or {}
    counts = {
        "replicas": sum(status_count(r, "replicas") for r in owned),
        "updatedReplicas": status_count(new_rs, "replicas") if new_rs else 0,
        "readyReplicas": sum(status_count(r, "readyReplicas") for r in owned),
        "availableReplicas": sum(status_count(r, "availableReplicas") for r in owned),
    }
    status: Obj = {"observedGeneration": deployment["metadata"].get("generation", 1)}
    status.update({k: v for k, v in counts.items() if v})
    status["replicas"] = counts["replicas"]
    unavailable = max(replicas - counts["availableReplicas"], 0)
    if unavailable:
        status["unavailableReplicas"] = unavailable
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    previous = {c["type"]: c for c in old_status.get("conditions") or []}
    surge = surge_of(spec, replicas)
    min_available = replicas - unavailable_of(spec, replicas, surge)
    if counts["availableReplicas"] >= min_available:
        available = condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            now,
            previous.get("Available"),
        )
    else:
        available = condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            now,
            previous.get("Available"),
        )
    conditions = [available]
    progressing = _progressing(deployment, new_rs, counts, replicas, previous.get("Progressing"), now)
    if progressing is not None:
        conditions.append(progressing)
    status["conditions"] = ordered(conditions)
    return status


def _progressing(
    deployment: Obj,
    new_rs: Obj | None,
    counts: dict[str, int],
    replicas: int,
    old: Obj | None,
    now: float,
) -> Obj | None:
    if new_rs is None:
        return old
    name = new_rs["metadata"]["name"]
    complete = (
        counts["updatedReplicas"] == replicas
        and counts["replicas"] == replicas
        and counts["availableReplicas"] >= replicas
    )
    if complete:
        return condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{name}" has successfully progressed.',
            now,
            old,
        )
    before = deployment.get("status") or {}
    # Progress is what upstream counts: more updated, ready or available pods, or fewer old ones.
    progressed = any(
        counts[k] > int(before.get(k, 0)) for k in ("updatedReplicas", "readyReplicas", "availableReplicas")
    )
    old_pods = counts["replicas"] - counts["updatedReplicas"]
    progressed = progressed or old_pods < int(before.get("replicas", 0)) - int(
        before.get("updatedReplicas", 0)
    )
    if progressed or old is None:
        stamp = rfc3339(now)
        transition = old["lastTransitionTime"] if old and old.get("status") == "True" else stamp
        return {
            "type": "Progressing",
            "status": "True",
            "lastUpdateTime": stamp,
            "lastTransitionTime": transition,
            "reason": "ReplicaSetUpdated",
            "message": f'ReplicaSet "{name}" is progressing.',
        }
    if old.get("reason") in ("NewReplicaSetAvailable", "ProgressDeadlineExceeded"):
        return old
    deadline = int(deployment["spec"].get("progressDeadlineSeconds", 600))
    if now - parse_rfc3339(old.get("lastUpdateTime") or rfc3339(now)) > deadline:
        return condition(
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            f'ReplicaSet "{name}" has timed out progressing.',
            now,
            old,
        )
    return old


def status_count(obj: Obj | None, field: str) -> int:
    if obj is None:
        return 0
    return int((obj.get("status") or {}).get(field, 0))


def ordered(conditions: list[Obj]) -> list[Obj]:
    order = {"Available": 0, "Progressing": 1, "ReplicaFailure": 2}
    return sorted(conditions, key=lambda c: order.get(c["type"], 9))


def object_key(obj: Obj) -> tuple[str, str]:
    return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def owned_by(store: Store, rtype: ResourceType, *, deleting: bool = True) -> dict[str, list[Obj]]:
    """``group_by_owner`` over every object of ``rtype`` (without those being deleted unless ``deleting``),
    worked out once per change of the type however many controllers ask; callers must not mutate it."""

    def compute() -> dict[str, list[Obj]]:
        objects = store.values(rtype)
        if not deleting:
            objects = [o for o in objects if not o["metadata"].get("deletionTimestamp")]
        return group_by_owner(objects)

    return store.kept(rtype, "owners" if deleting else "owners-alive", compute)


def group_by_owner(objects: Iterable[Obj]) -> dict[str, list[Obj]]:
    grouped: dict[str, list[Obj]] = {}
    for obj in objects:
        owner = controller_uid(obj)
        if owner is not None:
            grouped.setdefault(owner, []).append(obj)
    return grouped
