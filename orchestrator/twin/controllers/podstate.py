"""What the twin's kubelet tracks per pod and container, and how it renders as pod status."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from orchestrator.twin.runtime_protocol import ContainerVerdict
from orchestrator.twin.store import Obj
from orchestrator.twin.timefmt import rfc3339

CREATE_DELAY_S = 2.0  # sandbox + container creation after binding
TERMINATION_S = 2.0  # how long a deleted pod shows as Terminating before it is gone
BACKOFF_INITIAL_S = 10.0
BACKOFF_MAX_S = 300.0
BACKOFF_RESET_S = 600.0  # a container that ran this long starts its backoff afresh, as the kubelet does
SCHEDULING_EVENT_EVERY_S = 60.0


def backoff(failures: int) -> float:
    """Delay before restart number ``failures`` (1-based): 0, 10, 20, 40 ... capped at 300 seconds."""
    if failures <= 1:
        return 0.0
    return float(min(BACKOFF_INITIAL_S * 2 ** (failures - 2), BACKOFF_MAX_S))


@dataclass
class ContainerTrack:
    image: str
    state: dict[str, Any] = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None  # current attempt, while running
    ever_started: bool = False
    restarts: int = 0
    failures: int = 0
    next_try: float = 0.0
    pull_failures: int = 0
    ready: bool = False
    container_id: str = ""
    unlive_since: float | None = None  # first failed liveness probe of the current failing streak


@dataclass
class PodTrack:
    scheduled_at: float
    node: str
    ip: str
    containers: dict[str, ContainerTrack] = field(default_factory=dict)
    # What the last status write was built from, and the pod version it produced: a step that changes
    # neither skips rebuilding the status.
    written: tuple[Any, ...] = ()
    written_rv: str = ""


def build_status(current: Obj, track: PodTrack, now: float, *, host_ip: str) -> Obj:
    """The pod status the kubelet reports for ``track`` (no side effects)."""
    old_status = current.get("status") or {}
    previous = {c["type"]: c for c in old_status.get("conditions") or []}
    created = now >= track.scheduled_at + CREATE_DELAY_S
    statuses = []
    for container in current["spec"].get("containers") or []:
        state = track.containers[container["name"]]
        entry: Obj = {
            "name": container["name"],
            "state": state.state,
            "lastState": state.last_state,
            "ready": state.ready,
            "restartCount": state.restarts,
            "image": container["image"],
            "imageID": image_id(container["image"]) if state.ever_started else "",
            "started": "running" in state.state,
        }
        if state.container_id:
            entry["containerID"] = state.container_id
        statuses.append(entry)
    unready = [s["name"] for s in statuses if not s["ready"]]
    all_started = all(track.containers[s["name"]].ever_started for s in statuses)
    conditions = [
        condition("PodReadyToStartContainers", created, now, previous),
        condition("Initialized", True, now, previous),
        condition("Ready", not unready, now, previous, unready),
        condition("ContainersReady", not unready, now, previous, unready),
        condition("PodScheduled", True, now, previous),
    ]
    status: Obj = {
        "phase": "Running" if all_started else "Pending",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": rfc3339(track.scheduled_at),
        "containerStatuses": statuses,
        "qosClass": qos_class(current),
    }
    if created:
        status["podIP"] = track.ip
        status["podIPs"] = [{"ip": track.ip}]
    return status


def condition(
    kind: str, ok: bool, now: float, previous: dict[str, Obj], unready: list[str] | None = None
) -> Obj:
    status = "True" if ok else "False"
    old = previous.get(kind)
    condition: Obj = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": old["lastTransitionTime"] if old and old["status"] == status else rfc3339(now),
    }
    if not ok and unready:
        condition["reason"] = "ContainersNotReady"
        condition["message"] = f"containers with unready status: [{' '.join(unready)}]"
    return condition


def qos_class(pod: Obj) -> str:
    containers = pod["spec"].get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        set(r.get("limits") or {}) >= {"cpu", "memory"}
        and all((r.get("requests") or {}).get(k, v) == v for k, v in (r.get("limits") or {}).items())
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def image_id(image: str) -> str:
    repository = image.split("@")[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def image_size(image: str) -> int:
    return 20_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:6], 16) * 10


def probe_failure(probe: Obj, ip: str) -> str:
    if "httpGet" in probe:
        return "HTTP probe failed with statuscode: 503"
    if "grpc" in probe:
        port = probe["grpc"].get("port")
        return f'timeout: failed to connect service "{ip}:{port}" within 1s: context deadline exceeded'
    if "tcpSocket" in probe:
        return f"dial tcp {ip}:{probe['tcpSocket'].get('port')}: connect: connection refused"
    return "command failed with exit code 1"


def probe_ready(container: Obj, state: ContainerTrack, verdict: ContainerVerdict, now: float) -> bool:
    probe = container.get("readinessProbe")
    if not probe:
        return True  # without a readiness probe a running container is ready, whatever the app does
    started_at = state.started_at if state.started_at is not None else now
    return verdict.ready and now - started_at >= probe.get("initialDelaySeconds", 0)


def terminated_state(state: ContainerTrack, code: int, reason: str, message: str | None, now: float) -> Obj:
    started = state.state.get("running", {}).get("startedAt", rfc3339(now))
    terminated: Obj = {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": rfc3339(now),
        "containerID": state.container_id,
    }
    if message:
        terminated["message"] = message
    return terminated
