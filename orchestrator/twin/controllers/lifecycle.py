"""The kubelet of the twin: container starts, crashes, backoff, probes, deletion; binding via the scheduler.

Container outcomes come from the runtime (``PodRuntime.verdict``); this module keeps what the kubelet
keeps (restart counts, backoff timers, last termination, image caches) and writes pod status only when it
changes, so a quiet cluster costs a verdict call per container per step and nothing more.
"""

from __future__ import annotations

from orchestrator.rng import derive
from orchestrator.twin.controllers.events import EventRecorder
from orchestrator.twin.controllers.podstate import (
    BACKOFF_INITIAL_S,
    BACKOFF_MAX_S,
    BACKOFF_RESET_S,
    CREATE_DELAY_S,
    TERMINATION_S,
    ContainerTrack,
    PodTrack,
    backoff,
    build_status,
    image_size,
    probe_failure,
    probe_ready,
    terminated_state,
)
from orchestrator.twin.controllers.scheduling import NodeSlot, Scheduler, slots
from orchestrator.twin.logbook import LogBook
from orchestrator.twin.runtime_protocol import ContainerVerdict, PodRuntime
from orchestrator.twin.store import NODES, PODS, Obj, Store
from orchestrator.twin.timefmt import rfc3339
from orchestrator.vocabulary.quantities import go_duration

TERMINAL_PHASES = ("Succeeded", "Failed")


class Kubelet:
    """Scheduling and container lifecycle for every pod, once per step."""

    def __init__(
        self, *, store: Store, events: EventRecorder, logbook: LogBook, runtime: PodRuntime, seed: int
    ) -> None:
        self.store = store
        self.events = events
        self.logbook = logbook
        self.runtime = runtime
        self._ids = derive(seed, "twin.container-ids")
        self._tracks: dict[str, PodTrack] = {}
        self._images: dict[str, set[str]] = {}  # node -> images present
        self.scheduler = Scheduler(store, events)
        self._deleting: dict[str, float] = {}

    # -- deletion ---------------------------------------------------------------------------------
    def delete_pod(self, pod: Obj, now: float, *, immediately: bool = False) -> None:
        """Graceful deletion: Killing events, Terminating for a moment, then gone (or gone at once)."""
        meta = pod["metadata"]
        current = self.store.find(PODS, meta["namespace"], meta["name"])
        if current is None:
            return
        track = self._tracks.get(meta["uid"])
        if track is not None:
            for name, container in sorted(track.containers.items()):
                if "running" in container.state:
                    self.events.record(
                        involved=current,
                        reason="Killing",
                        now=now,
                        component="kubelet",
                        host=track.node,
                        field_path=f"spec.containers{{{name}}}",
                        message=f"Stopping container {name}",
                    )
        if immediately or track is None:
            self._remove(current)
            return
        grace = int(current["spec"].get("terminationGracePeriodSeconds", 30))
        meta_new = {
            **current["metadata"],
            "deletionTimestamp": rfc3339(now + grace),
            "deletionGracePeriodSeconds": grace,
        }
        self.store.put(PODS, {**current, "metadata": meta_new})
        self._deleting[meta["uid"]] = now

    def _remove(self, pod: Obj) -> None:
        meta = pod["metadata"]
        if self.store.find(PODS, meta["namespace"], meta["name"]) is not None:
            self.store.delete(PODS, meta["namespace"], meta["name"])
        self._tracks.pop(meta["uid"], None)
        self._deleting.pop(meta["uid"], None)
        self.scheduler.forget(meta["uid"])
        self.logbook.forget_pod(namespace=meta["namespace"], pod=meta["name"])

    # -- the step ---------------------------------------------------------------------------------
    def step(self, now: float) -> None:
        nodes: dict[str, NodeSlot] | None = None
        for pod in self.store.list(PODS):
            uid = pod["metadata"]["uid"]
            if uid in self._deleting:
                if now - self._deleting[uid] >= TERMINATION_S:
                    self._remove(pod)
                continue
            if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
                continue  # its containers have ended for good (a Job's pod): nothing more to run or write
            if uid not in self._tracks:
                if nodes is None:
                    nodes = slots(self.store.values(NODES), self.store.values(PODS))
                if not self._schedule(pod, nodes, now):
                    continue
                pod = self.store.get(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
            self._advance(pod, self._tracks[uid], now)
        alive = {p["metadata"]["uid"] for p in self.store.values(PODS)}
        for uid in [u for u in self._tracks if u not in alive]:
            del self._tracks[uid]

    def _schedule(self, pod: Obj, nodes: dict[str, NodeSlot], now: float) -> bool:
        verdicts = [self.runtime.verdict(pod, c, now) for c in pod["spec"].get("containers") or []]
        bound = self.scheduler.bind(pod, nodes, fits=all(v.schedulable for v in verdicts), now=now)
        if bound is None:
            return False
        node_name, ip = bound
        self._tracks[pod["metadata"]["uid"]] = PodTrack(
            scheduled_at=now,
            node=node_name,
            ip=ip,
            containers={c["name"]: ContainerTrack(image=c["image"]) for c in pod["spec"]["containers"]},
        )
        return True

    # -- containers -------------------------------------------------------------------------------
    def _advance(self, pod: Obj, track: PodTrack, now: float) -> None:
        for container in pod["spec"].get("containers") or []:
            name = container["name"]
            state = track.containers.get(name)
            if state is None:
                state = track.containers[name] = ContainerTrack(image=container["image"])
            if state.image != container["image"] and state.ever_started:
                self._container_event(
                    pod,
                    track,
                    name,
                    now,
                    "Killing",
                    f"Container {name} definition changed, will be restarted",
                )
                state.image = container["image"]
                state.last_state = {"terminated": terminated_state(state, 137, "Error", None, now)}
                state.state, state.started_at, state.ready = (
                    {"waiting": {"reason": "ContainerCreating"}},
                    None,
                    False,
                )
                state.failures, state.next_try, state.pull_failures = 0, now, 0
            state.image = container["image"]
            if now < track.scheduled_at + CREATE_DELAY_S:
                continue
            if "running" in state.state:
                self._while_running(
                    pod, track, container, state, self.runtime.verdict(pod, container, now), now
                )
            elif now >= state.next_try:
                self._try_start(pod, track, container, state, self.runtime.verdict(pod, container, now), now)
            else:
                self._while_backing_off(pod, track, container, state)
        signature = (
            now >= track.scheduled_at + CREATE_DELAY_S,
            tuple(
                (c.state, c.last_state, c.ready, c.restarts, c.ever_started, c.image)
                for c in track.containers.values()
            ),
        )
        current = self.store.get(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        if signature != track.written or current["metadata"]["resourceVersion"] != track.written_rv:
            self._write_status(current, track, now)
            track.written = signature
            track.written_rv = self.store.get(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])[
                "metadata"
            ]["resourceVersion"]

    def _try_start(
        self,
        pod: Obj,
        track: PodTrack,
        container: Obj,
        state: ContainerTrack,
        verdict: ContainerVerdict,
        now: float,
    ) -> None:
        name, image = container["name"], container["image"]
        cached = image in self._images.get(track.node, set())
        if not verdict.image_known:
            state.pull_failures += 1
            state.next_try = now + min(BACKOFF_INITIAL_S * 2 ** (state.pull_failures - 1), BACKOFF_MAX_S)
            self._container_event(pod, track, name, now, "Pulling", f'Pulling image "{image}"')
            self._container_event(
                pod,
                track,
                name,
                now,
                "Failed",
                warning=True,
                message=(
                    f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and '
                    f'unpack image "{image}": failed to resolve reference "{image}": {image}: not found'
                ),
            )
            self._container_event(pod, track, name, now, "Failed", "Error: ErrImagePull", warning=True)
            state.state = {
                "waiting": {
                    "reason": "ErrImagePull",
                    "message": f"rpc error: code = NotFound desc = "
                    f'failed to pull and unpack image "{image}": not found',
                }
            }
            return
        state.pull_failures = 0
        if container.get("imagePullPolicy") == "Always" or not cached:
            self._container_event(pod, track, name, now, "Pulling", f'Pulling image "{image}"')
            self._container_event(
                pod,
                track,
                name,
                now,
                "Pulled",
                f'Successfully pulled image "{image}" in 1.204s (1.204s including waiting). '
                f"Image size: {image_size(image)} bytes.",
            )
            self._images.setdefault(track.node, set()).add(image)
        else:
            self._container_event(
                pod, track, name, now, "Pulled", f'Container image "{image}" already present on machine'
            )
        if state.ever_started:
            state.restarts += 1
        if "terminated" in state.state:
            state.last_state = {"terminated": state.state["terminated"]}
        state.ever_started = True
        state.container_id = f"containerd://{self._ids.getrandbits(256):064x}"
        self._container_event(pod, track, name, now, "Created", f"Created container: {name}")
        self._container_event(pod, track, name, now, "Started", f"Started container {name}")
        self.logbook.start_attempt(
            namespace=pod["metadata"]["namespace"], pod=pod["metadata"]["name"], container=name
        )
        state.started_at = now
        state.state = {"running": {"startedAt": rfc3339(now)}}
        state.ready = False
        if not verdict.starts or verdict.exit_reason:
            self._die(pod, track, container, state, verdict, now)
        else:
            state.ready = probe_ready(container, state, verdict, now)

    def _while_running(
        self,
        pod: Obj,
        track: PodTrack,
        container: Obj,
        state: ContainerTrack,
        verdict: ContainerVerdict,
        now: float,
    ) -> None:
        if verdict.exit_reason or not verdict.starts:
            self._die(pod, track, container, state, verdict, now)
            return
        if self._fails_liveness(pod, track, container, state, verdict, now):
            return
        ready = probe_ready(container, state, verdict, now)
        probe = container.get("readinessProbe")
        started_at = state.started_at if state.started_at is not None else now
        if not ready and probe and now - started_at >= probe.get("initialDelaySeconds", 0):
            self._container_event(
                pod,
                track,
                container["name"],
                now,
                "Unhealthy",
                warning=True,
                message=f"Readiness probe failed: {probe_failure(probe, track.ip)}",
            )
        state.ready = ready

    def _fails_liveness(
        self,
        pod: Obj,
        track: PodTrack,
        container: Obj,
        state: ContainerTrack,
        verdict: ContainerVerdict,
        now: float,
    ) -> bool:
        """Liveness as the kubelet probes it: a failing streak of ``failureThreshold`` periods kills."""
        probe = container.get("livenessProbe")
        started_at = state.started_at if state.started_at is not None else now
        if not probe or verdict.live or now - started_at < probe.get("initialDelaySeconds", 0):
            state.unlive_since = None
            return False
        if state.unlive_since is None:
            state.unlive_since = now
        name = container["name"]
        self._container_event(
            pod,
            track,
            name,
            now,
            "Unhealthy",
            warning=True,
            message=f"Liveness probe failed: {probe_failure(probe, track.ip)}",
        )
        threshold = int(probe.get("failureThreshold", 3)) - 1
        if now - state.unlive_since < threshold * float(probe.get("periodSeconds", 10)):
            return False
        self._container_event(
            pod, track, name, now, "Killing", f"Container {name} failed liveness probe, will be restarted"
        )
        state.unlive_since = None
        self._die(pod, track, container, state, ContainerVerdict(exit_reason="Error", exit_code=137), now)
        return True

    def _die(
        self,
        pod: Obj,
        track: PodTrack,
        container: Obj,
        state: ContainerTrack,
        verdict: ContainerVerdict,
        now: float,
    ) -> None:
        reason = verdict.exit_reason or "Error"
        code = verdict.exit_code if verdict.exit_code is not None else (137 if reason == "OOMKilled" else 1)
        if reason == "OOMKilled":
            node = self.store.get(NODES, "", track.node)
            self.events.record(
                involved=node,
                reason="OOMKilling",
                now=now,
                type_="Warning",
                component="kernel-monitor",
                host=track.node,
                message=(
                    f"Memory cgroup out of memory: Killed process {1000 + state.restarts} "
                    f"({container['name']}) total-vm:0kB, anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"
                ),
            )
        ran = now - (state.started_at if state.started_at is not None else now)
        if ran >= BACKOFF_RESET_S:
            state.failures = 0
        state.failures += 1
        state.state = {"terminated": terminated_state(state, code, reason, verdict.exit_message, now)}
        state.started_at, state.ready = None, False
        state.next_try = now + backoff(state.failures)

    def _while_backing_off(self, pod: Obj, track: PodTrack, container: Obj, state: ContainerTrack) -> None:
        name = container["name"]
        waiting = state.state.get("waiting", {})
        if "terminated" in state.state:
            state.last_state = {"terminated": state.state["terminated"]}
            delay = int(backoff(state.failures))
            pod_id = f"{pod['metadata']['name']}_{pod['metadata']['namespace']}({pod['metadata']['uid']})"
            state.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {go_duration(delay)} restarting failed "
                    f"container={name} pod={pod_id}",
                }
            }
        if state.state.get("waiting", {}).get("reason") == "CrashLoopBackOff":
            pod_id = f"{pod['metadata']['name']}_{pod['metadata']['namespace']}({pod['metadata']['uid']})"
            self._container_event(
                pod,
                track,
                name,
                self.store.now,
                "BackOff",
                warning=True,
                message=f"Back-off restarting failed container {name} in pod {pod_id}",
            )
        elif waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff"):
            image = container["image"]
            state.state = {
                "waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
            }
            self._container_event(
                pod, track, name, self.store.now, "BackOff", f'Back-off pulling image "{image}"'
            )
            self._container_event(
                pod, track, name, self.store.now, "Failed", "Error: ImagePullBackOff", warning=True
            )

    def _container_event(
        self,
        pod: Obj,
        track: PodTrack,
        name: str,
        now: float,
        reason: str,
        message: str,
        *,
        warning: bool = False,
    ) -> None:
        self.events.record(
            involved=pod,
            reason=reason,
            message=message,
            now=now,
            component="kubelet",
            host=track.node,
            field_path=f"spec.containers{{{name}}}",
            type_="Warning" if warning else "Normal",
        )

    # -- status -----------------------------------------------------------------------------------
    def _write_status(self, current: Obj, track: PodTrack, now: float) -> None:
        status = build_status(current, track, now, host_ip=self._host_ip(track.node))
        if status != current.get("status"):
            self.store.put(PODS, {**current, "status": status})

    def _host_ip(self, node_name: str) -> str:
        node = self.store.get(NODES, "", node_name)
        return str(node["status"]["addresses"][0]["address"])
