"""The job controller of the twin: pods from a Job's template until its completions succeed, and its status.

Indexed Jobs get one pod per completion index (``<job>-<index>-<suffix>``, the index in a label, an
annotation, ``JOB_COMPLETION_INDEX`` and the hostname), NonIndexed ones interchangeable pods. The twin
runs no container process, so a Job's pods end only when something outside writes their terminal phase
through the status subresource, as a node's kubelet would; this controller counts what it finds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orchestrator.errors import ApiStatusError
from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.workloads import owned_by, owner_reference
from orchestrator.twin.store import JOBS, PODS, Obj, Store
from orchestrator.twin.timefmt import rfc3339
from orchestrator.twin.validation import invalid, raise_invalid, required

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_BACKOFF_LIMIT = 6
DeletePod = Callable[[Obj, float], None]


def job_defaults(job: Obj, _old: Obj | None) -> None:
    """The API server's defaults of a Job, and the 422 it answers for a template a Job cannot run."""
    spec = job.setdefault("spec", {})
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    spec.setdefault("suspend", False)
    if spec["completionMode"] == "NonIndexed":
        spec.setdefault("completions", 1)
    name = (job.get("metadata") or {}).get("name", "")
    causes = []
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy is None:
        causes.append(required("spec.template.spec.restartPolicy"))
    elif policy not in ("OnFailure", "Never"):
        causes.append(
            invalid("spec.template.spec.restartPolicy", policy, 'supported values: "OnFailure", "Never"')
        )
    if spec["completionMode"] not in ("NonIndexed", "Indexed"):
        causes.append(invalid("spec.completionMode", spec["completionMode"], "must be NonIndexed or Indexed"))
    elif spec["completionMode"] == "Indexed" and not isinstance(spec.get("completions"), int):
        causes.append(required("spec.completions"))
    raise_invalid(JOBS, name, causes)


def compressed(indexes: set[int]) -> str:
    """Completed indexes as the API writes them: ascending, runs of consecutive ones as ``a-b``: "0-1,3"."""
    ranges: list[list[int]] = []
    for index in sorted(indexes):
        if ranges and index == ranges[-1][1] + 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _index_of(pod: Obj) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX_KEY)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _finished(job: Obj) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _condition(kind: str, reason: str, message: str, now: float) -> Obj:
    stamp = rfc3339(now)
    return {"type": kind, "status": "True", "reason": reason, "message": message,
            "lastProbeTime": stamp, "lastTransitionTime": stamp}  # fmt: skip


class JobController:
    def __init__(self, store: Store, events: EventRecorder, delete_pod: DeletePod) -> None:
        self.store = store
        self.events = events
        self.delete_pod = delete_pod
        self._synced = -1

    def reconcile(self, now: float) -> None:
        if not self.store.changed_since(self._synced, PODS, JOBS):
            return
        by_owner = owned_by(self.store, PODS, deleting=False)
        for job in self.store.list(JOBS):
            if _finished(job) is None:
                self._sync(job, by_owner.get(job["metadata"]["uid"], []), now)
        self._synced = self.store.resource_version

    def _sync(self, job: Obj, pods: list[Obj], now: float) -> None:
        spec = job["spec"]
        indexed = spec.get("completionMode") == "Indexed"
        completions = int(spec.get("completions") or 1)
        active = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")]
        succeeded = [p for p in pods if _phase(p) == "Succeeded"]
        failed = sum(1 for p in pods if _phase(p) == "Failed")
        done = {i for i in map(_index_of, succeeded) if i is not None and i < completions}
        finished_count = len(done) if indexed else len(succeeded)
        status: Obj = {k: v for k, v in (job.get("status") or {}).items() if k != "conditions"}
        conditions = list((job.get("status") or {}).get("conditions") or [])
        status.setdefault("startTime", rfc3339(now))
        if failed > int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)):
            for pod in active:
                self.delete_pod(pod, now)
            active = []
            conditions.append(_condition("Failed", "BackoffLimitExceeded", "Job has reached the specified "
                                         "backoff limit", now))  # fmt: skip
            self.events.record(involved=job, reason="BackoffLimitExceeded", now=now, type_="Warning",
                               component="job-controller", message="Job has reached the specified backoff "
                               "limit")  # fmt: skip
        elif finished_count >= completions:
            conditions.append(_condition("Complete", "CompletionsReached", "Reached expected number of "
                                         "succeeded pods", now))  # fmt: skip
            status["completionTime"] = rfc3339(now)
            self.events.record(involved=job, reason="Completed", now=now, component="job-controller",
                               message="Job completed")  # fmt: skip
        elif not spec.get("suspend"):
            active += self._start(job, active, done, finished_count, now)
        status.update(active=len(active), succeeded=finished_count, failed=failed, ready=sum(
            1 for p in active
            if any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (p.get("status") or {}).get("conditions") or [])
        ), uncountedTerminatedPods={})  # fmt: skip
        if indexed and done:
            status["completedIndexes"] = compressed(done)
        for key in ("active", "succeeded", "failed"):
            if not status[key]:
                del status[key]  # omitted when zero, as the API serves them
        if conditions:
            status["conditions"] = conditions
        if status != job.get("status"):
            self.store.put(JOBS, {**job, "status": status})

    def _start(self, job: Obj, active: list[Obj], done: set[int], finished: int, now: float) -> list[Obj]:
        spec = job["spec"]
        completions = int(spec.get("completions") or 1)
        room = int(spec.get("parallelism", 1)) - len(active)
        if spec.get("completionMode") == "Indexed":
            running = {_index_of(p) for p in active}
            wanted: list[int | None] = [i for i in range(completions) if i not in done and i not in running]
        else:
            wanted = [None] * (completions - finished - len(active))
        created = [self._create_pod(job, index, now) for index in wanted[: max(room, 0)]]
        return [pod for pod in created if pod is not None]

    def _create_pod(self, job: Obj, index: int | None, now: float) -> Obj | None:
        template = json.loads(json.dumps(job["spec"]["template"]))
        meta, spec = template.get("metadata") or {}, template.get("spec") or {}
        job_name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        base = job_name if index is None else f"{job_name}-{index}"
        name = f"{base}-{self.store.random_suffix()}"
        while self.store.find(PODS, job["metadata"]["namespace"], name) is not None:
            name = f"{base}-{self.store.random_suffix()}"
        labels: dict[str, str] = {
            **(meta.get("labels") or {}), "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": job_name, "controller-uid": uid, "job-name": job_name,
        }  # fmt: skip
        annotations: dict[str, Any] = dict(meta.get("annotations") or {})
        if index is not None:
            labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
            spec.setdefault("hostname", base)
            field_ref = {
                "fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}
            }
            for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
                env = [e for e in container.get("env") or [] if e.get("name") != INDEX_ENV]
                container["env"] = [{"name": INDEX_ENV, "valueFrom": field_ref}, *env]
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "generateName": f"{base}-",
                "namespace": job["metadata"]["namespace"],
                "labels": labels,
                "ownerReferences": [owner_reference(job)],
            },  # fmt: skip
            "spec": spec,
        }
        if annotations:
            pod["metadata"]["annotations"] = annotations
        try:
            created = self.store.create(PODS, pod)
        except ApiStatusError as exc:  # a template the pod admission refuses: told, as upstream does
            self.events.record(involved=job, reason="FailedCreate", now=now, type_="Warning",
                               component="job-controller", message=f"Error creating: {exc}")  # fmt: skip
            return None
        self.events.record(involved=job, reason="SuccessfulCreate", now=now, component="job-controller",
                           message=f"Created pod: {name}")  # fmt: skip
        return created
