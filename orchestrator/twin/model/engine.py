"""The application model: each step, read the cluster state, play the workload, account for resources.

``AppModel.step(now, snapshot)`` is the whole model step; it writes log lines through ``LogSink``,
accumulates span metrics and per-pod usage, samples traces and returns the pods a PodChaos kills.
Randomness comes from streams derived from the seed, so the same seed and the same cluster history give
the same output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.catalog.topology import Call, Service, ServiceKind, Topology
from orchestrator.rng import derive
from orchestrator.twin.model import chaos as chaos_effects
from orchestrator.twin.model import messages
from orchestrator.twin.model.chaos import Effects
from orchestrator.twin.model.datastores import DatastoreStats, account_datastores
from orchestrator.twin.model.flags import FlagEffects, flag_effects
from orchestrator.twin.model.podlogs import PodLogger
from orchestrator.twin.model.registry import ImageRegistry
from orchestrator.twin.model.spans import Span, SpanMetrics, TraceBook
from orchestrator.twin.model.state import ContainerSpec, PodView, Snapshot, endpoints
from orchestrator.twin.model.symptoms import MIB, Reach, TopologyIndex, reach, required_vars, start_failure
from orchestrator.twin.model.traffic import OVERLOAD_UTILISATION, PodCtx, StepTraffic, make_trace

# Requests played one by one per step, over all routes and flows; above it each played request stands for
# several (counters then grow by the weight), which bounds a step's cost whatever the request rate.
PLAY_BUDGET = 24
TRACE_EVERY = 5
IDLE_CORES = 0.002
# What a runtime burns with no requests at all (GC, JIT, schedulers, health checks), in cores: a CPU
# limit has to leave room for it before any request is served.
RUNTIME_CORES = {"java": 0.04, "dotnet": 0.015, "node": 0.008, "python": 0.008, "go": 0.004}
# After this long without endpoints a client's connection pool has given up: its errors change wording.
LONG_OUTAGE_S = 30.0
LOADGEN_CALLER = Service(name="external-client", language="Python", image="external")


@dataclass
class Usage:
    """Cumulative cAdvisor-like counters of one container, and its current working set."""

    cpu_seconds: float = 0.0
    throttled_periods: float = 0.0
    periods: float = 0.0
    working_set: float = 0.0
    memory_limit: float | None = None
    cores: float = 0.0  # the CPU rate of the last step, as a metrics-server window reports it


@dataclass
class StepReport:
    requests: int
    kills: list[str] = field(default_factory=list)


def calls_per_root(calls: tuple[Call, ...], into: dict[str, float], factor: float = 1.0) -> None:
    """Expected calls per service for one request of a route (no side effects beyond ``into``)."""
    for call in calls:
        here = factor * call.count * call.share
        into[call.to] = into.get(call.to, 0.0) + here
        calls_per_root(call.calls, into, here)


def _played(n: int, scale: float) -> int:
    """How many of ``n`` requests to play one by one: all of them under the budget, else a share (>= 1)."""
    return 0 if n == 0 else max(1, math.ceil(n * scale))


# What a reach answer read of the pods: the caller pod's containers (None: no caller pod), the Service whose
# endpoints it consulted (None: none) and the containers of each of them.
_ReachReads = tuple[tuple[ContainerSpec, ...] | None, str | None, tuple[tuple[ContainerSpec, ...], ...]]


def _served_by(shot: Snapshot, service: str) -> tuple[tuple[ContainerSpec, ...], ...]:
    """The containers of each endpoint of ``service``: all a reach answer reads of them."""
    return tuple(view.containers for view in endpoints(shot, service))


def _ready(shot: Snapshot, name: str) -> list[PodView]:
    """The pods serving a service: its Service's endpoints, or its ready pods when it has no Service."""
    if name in shot.services:
        return endpoints(shot, name)
    return [p for p in shot.pods.get(name, []) if p.ready and not p.deleting]


class AppModel:
    def __init__(
        self,
        *,
        topology: Topology,
        registry: ImageRegistry,
        seed: int,
        logger: PodLogger,
        step_seconds: float = 5.0,
    ) -> None:
        self.topology = topology
        self.registry = registry
        self.step_seconds = step_seconds
        self.services = {s.name: s for s in topology.services}
        self.index = TopologyIndex(topology)
        # Asked of every container at every step, twice (the kubelet's verdict, the pod logs).
        self.required = {s.name: required_vars(s) for s in topology.services}
        self.runtime_cores = {
            s.name: RUNTIME_CORES.get(messages.idiom(s.language), IDLE_CORES)
            for s in topology.services
            if s.kind is not ServiceKind.DATASTORE and s.kind is not ServiceKind.QUEUE
        }
        self.callers: dict[str, set[str]] = {}
        for caller, callee, _critical in topology.edges():
            self.callers.setdefault(callee, set()).add(caller)
        self.rng = derive(seed, "twin.traffic")
        self.workload_rng = derive(seed, "twin.workload")
        self.trace_rng = derive(seed, "twin.traces")
        self.phase = derive(seed, "twin.daily-phase").uniform(0, 2 * math.pi)
        self.logger = logger
        self.spans = SpanMetrics()
        self.traces = TraceBook()
        self.usage: dict[tuple[str, str], Usage] = {}
        self.datastores: dict[str, DatastoreStats] = {}
        self.effects = Effects()
        self.flags = FlagEffects()
        self.snapshot: Snapshot | None = None
        # Reach answers outlive a step while what they are worked out from stays the same (``_reaches``): the
        # Services, DNS chaos and mis-dialled hosts, and for each answer what it read of the pods.
        self._reach_inputs: tuple[object, ...] | None = None
        self._reach_pods: list[tuple[object, ...]] | None = None
        self._reach_memo: dict[tuple[str, str, str], Reach] = {}
        self._reach_reads: dict[tuple[str, str, str], _ReachReads] = {}
        self.killed: set[str] = set()
        self.down_since: dict[str, float] = {}
        # Pods whose CPU could not keep up last step: their health checks time out, so they are not ready.
        self.saturated: set[str] = set()
        self.routes = [(r, Call(to=topology.entry_point, op=r.name, calls=r.calls)) for r in topology.routes]
        self.expected: list[dict[str, float]] = []
        for _route, root in self.routes:
            per: dict[str, float] = {}
            calls_per_root((root,), per)
            self.expected.append(per)
        self.flow_expected: list[dict[str, float]] = []
        for flow in topology.background:
            per = {}
            calls_per_root(flow.calls, per)
            self.flow_expected.append(per)

    # -- workload ---------------------------------------------------------------------------------
    def rate(self, now: float) -> float:
        """Requests per second at ``now``: a mild daily cycle around the topology's rate, plus noise."""
        day = math.sin(2 * math.pi * now / 86400.0 + self.phase)
        noise = math.exp(self.workload_rng.gauss(0.0, 0.08))
        return self.topology.requests_per_second * (1.0 + 0.25 * day) * noise

    def _poisson(self, lam: float) -> int:
        if lam > 30:
            return max(0, round(self.workload_rng.gauss(lam, math.sqrt(lam))))
        limit, k, p = math.exp(-lam), 0, 1.0
        while True:
            p *= self.workload_rng.random()
            if p <= limit:
                return k
            k += 1

    # -- pods -------------------------------------------------------------------------------------
    def _contexts(self, shot: Snapshot, counts: list[int], flows: list[int]) -> dict[str, list[PodCtx]]:
        load: dict[str, float] = {}
        pairs = [*zip(counts, self.expected, strict=True), *zip(flows, self.flow_expected, strict=True)]
        for n, per in pairs:
            for name, calls in per.items():
                load[name] = load.get(name, 0.0) + n * calls / self.step_seconds
        serving: dict[str, list[PodCtx]] = {}
        saturated: set[str] = set()
        self.saturated = saturated
        for name, service in self.services.items():
            ctxs: list[PodCtx] = []
            for pod in _ready(shot, name):
                spec = pod.container(service.container_name)
                if spec is None:
                    continue
                started = pod.started.get(spec.name)
                if started is not None and shot.now - started < service.model.startup_s:
                    continue  # Ready without a readiness probe, but the process is not listening yet
                build = self.registry.lookup(spec.image)
                factor = build.behaviour.cpu_factor if build is not None and build.behaviour else 1.0
                limit = spec.cpu_limit or 1.0
                stress = self.effects.stress_cpu.get(pod.name, 0.0) + self.flags.cpu_cores.get(name, 0.0)
                ctxs.append(
                    PodCtx(
                        view=pod,
                        service=service,
                        build=build,
                        capacity=max(limit - min(stress, limit * 0.95), 0.001),
                        cpu_ms=service.model.cpu_ms_per_request * factor,
                    )
                )
            for ctx in ctxs:
                ctx.rps = load.get(name, 0.0) / len(ctxs)
                demand = ctx.rps * ctx.cpu_ms / 1000.0 + self.runtime_cores.get(name, IDLE_CORES)
                rho = demand / ctx.capacity
                ctx.rho = rho
                if rho >= 1.0:
                    saturated.add(ctx.name)
                ctx.busy = min(demand, ctx.capacity)
                # Under a CPU quota below one core a request runs at the quota's pace (CFS throttling).
                service_ms = ctx.cpu_ms / min(1.0, ctx.capacity)
                if rho < OVERLOAD_UTILISATION:
                    ctx.wait_ms = service_ms * rho / (1.0 - rho)
                else:
                    # Past saturation the backlog grows: waits climb steeply toward the client deadlines.
                    ctx.wait_ms = service_ms * 9.0 + (rho - OVERLOAD_UTILISATION) * 20_000.0
            serving[name] = ctxs
        return serving

    def _account(self, shot: Snapshot, serving: dict[str, list[PodCtx]], now: float) -> None:
        """cAdvisor counters and working sets for every running container."""
        busy = {ctx.name: ctx for ctxs in serving.values() for ctx in ctxs}
        dt = self.step_seconds
        live: set[tuple[str, str]] = set()
        for pod in shot.all_pods():
            service = self.services.get(pod.workload)
            for spec in pod.containers:
                key = (pod.name, spec.name)
                live.add(key)
                usage = self.usage.setdefault(key, Usage())
                usage.memory_limit = spec.memory_limit
                if spec.name not in pod.started:
                    usage.working_set = usage.cores = 0.0
                    continue
                main = service is not None and spec.name == service.container_name
                ctx = busy.get(pod.name) if main else None
                stress = (
                    self.effects.stress_cpu.get(pod.name, 0.0) + self.flags.cpu_cores.get(pod.workload, 0.0)
                    if main
                    else 0.0
                )
                limit = spec.cpu_limit
                cores = (ctx.busy if ctx else IDLE_CORES) + stress
                if limit is not None:
                    cores = min(cores, limit)
                usage.cpu_seconds += cores * dt
                usage.cores = cores
                if limit is not None:
                    usage.periods += dt * 10.0
                    usage.throttled_periods += dt * 10.0 * max(0.0, min(1.0, (cores / limit - 0.6) / 0.4))
                usage.working_set = self.working_set(pod, spec.name, now, rps=ctx.rps if ctx else 0.0)
        for key in [k for k in self.usage if k not in live]:
            del self.usage[key]

    def working_set(self, pod: PodView, container: str, now: float, *, rps: float = 0.0) -> float:
        """Bytes in use: the service's base, a share per request rate, any leak of its build, stress."""
        service = self.services.get(pod.workload)
        if service is None or container != service.container_name:
            return 24.0 * MIB
        spec = pod.container(container)
        mib = service.model.memory_base_mib + service.model.memory_per_rps_mib * rps
        build = self.registry.lookup(spec.image) if spec is not None else None
        if build is not None and build.behaviour is not None and container in pod.started:
            mib += build.behaviour.memory_leak_mib_per_min * max(0.0, now - pod.started[container]) / 60.0
        leak = self.flags.leak_mib_per_min.get(service.name, 0.0)
        if leak and container in pod.started:
            mib += leak * max(0.0, now - pod.started[container]) / 60.0
        return mib * MIB + self.effects.stress_memory.get(pod.name, 0.0)

    # -- the step ---------------------------------------------------------------------------------
    def _reach_fn(self, shot: Snapshot) -> Callable[[Service, PodCtx | None, str], Reach]:
        def reach_of(caller: Service, pod: PodCtx | None, callee: str) -> Reach:
            wrong = self.flags.wrong_host.get((caller.name, callee))
            if wrong is not None:
                return Reach("dns_failure", wrong, "", "")
            view = pod.view if pod is not None else None
            consulted: list[str] = []
            found = reach(
                index=self.index,
                shot=shot,
                effects=self.effects,
                caller=caller,
                caller_pod=view,
                callee=callee,
                consulted=consulted,
            )
            target = consulted[0] if consulted else None
            self._reach_reads[(caller.name, view.name if view is not None else "", callee)] = (
                view.containers if view is not None else None,
                target,
                _served_by(shot, target) if target is not None else (),
            )
            return found

        return reach_of

    def _reaches(self, shot: Snapshot) -> dict[tuple[str, str, str], Reach]:
        """The reach answers of the step before that nothing they read has changed for: all of them while the
        pods' names, labels, readiness, deletion and containers stay (a pod restarting or backing off changes
        its status but none of these while it stays unready); else those whose caller pod has the same
        containers and whose Service has endpoints with the same containers. A change of the Services, DNS
        chaos or mis-dialled hosts starts a fresh map. Steps then skip working out every caller's reach
        again when one pod turns ready or a new one comes."""
        pods: list[tuple[object, ...]] = [
            (view.name, view.labels, view.ready, view.deleting, view.containers)
            for name in sorted(shot.pods)
            for view in shot.pods[name]
        ]
        inputs = (shot.services, self.effects.dns, self.flags.wrong_host)
        if inputs != self._reach_inputs:
            self._reach_inputs, self._reach_pods = inputs, pods
            self._reach_memo, self._reach_reads = {}, {}
        elif pods != self._reach_pods:
            self._reach_pods = pods
            containers = {view.name: view.containers for views in shot.pods.values() for view in views}
            served: dict[str, tuple[tuple[ContainerSpec, ...], ...]] = {}
            for key, (caller, target, behind) in list(self._reach_reads.items()):
                if target is not None and target not in served:
                    served[target] = _served_by(shot, target)
                if containers.get(key[1]) != caller or (target is not None and served[target] != behind):
                    del self._reach_reads[key]
                    self._reach_memo.pop(key, None)
        return self._reach_memo

    def step(self, now: float, shot: Snapshot) -> StepReport:
        """Advance the application by one step ending at ``now`` over the cluster state ``shot``."""
        self.snapshot = shot
        self.effects = chaos_effects.effects(shot, self.effects.selected)
        self.flags = flag_effects(self.topology, shot.configmaps)
        kills = self._kills()
        rate = self.rate(now)
        total_weight = sum(r.weight for r, _ in self.routes) or 1.0
        counts = [
            self._poisson(
                rate
                * r.weight
                / total_weight
                * self.step_seconds
                * (1.0 + self.flags.route_factor.get(r.name, 0.0) / 10.0)
            )
            for r, _ in self.routes
        ]
        caller_service = self.services.get(self.topology.loadgen or "", LOADGEN_CALLER)
        loadgen: list[PodCtx] = []
        if self.topology.loadgen is not None and self.topology.loadgen in shot.pods:
            loadgen = [
                PodCtx(view=p, service=caller_service, build=None)
                for p in shot.pods[self.topology.loadgen]
                if p.phase == "Running" and not p.deleting
            ]
            if not loadgen:
                counts = [0] * len(counts)  # the load generator is down: nobody sends traffic
        flows = [self._poisson(f.rate_per_second * self.step_seconds) for f in self.topology.background]
        serving = self._contexts(shot, counts, flows)
        self.logger.begin_step(now, shot=shot, effects=self.effects)
        traffic = StepTraffic(
            topology=self.topology,
            effects=self.effects,
            rng=self.rng,
            spans=self.spans,
            pods=serving,
            flags=self.flags,
            reach_of=self._reach_fn(shot),
            services=self.services,
            long_down=self._outages(serving, now),
            log=self.logger.call_failed,
            _reach=self._reaches(shot),
        )
        start = now - self.step_seconds
        scale = min(1.0, PLAY_BUDGET / max(1, sum(counts) + sum(flows)))
        for (_route, root), n in zip(self.routes, counts, strict=True):
            played = _played(n, scale)
            if played == 0:
                continue
            traffic.weight = n / played
            for i in range(played):
                offset_ms = (start + self.step_seconds * (i + 0.5) / played) * 1000.0
                caller = loadgen[i % len(loadgen)] if loadgen else None
                spans: list[Span] | None = [] if i % TRACE_EVERY == 0 else None
                traffic.call(caller, caller_service, root, start_ms=offset_ms, parent=None, trace=spans)
                if spans:
                    self.traces.add(make_trace(spans, rng=self.trace_rng, start_us=int(offset_ms * 1000)))
        for flow, n in zip(self.topology.background, flows, strict=True):
            workers = serving.get(flow.service) or []
            service = self.services[flow.service]
            played = _played(n, scale) if workers else 0
            for i in range(played):
                traffic.weight = n / played
                offset_ms = (start + self.step_seconds * (i + 0.5) / played) * 1000.0
                for call in flow.calls:
                    traffic.call(
                        workers[i % len(workers)], service, call, start_ms=offset_ms, parent=None, trace=None
                    )
        self._account(shot, serving, now)
        account_datastores(self, shot, serving, counts)
        self.logger.end_step(now, shot=shot, effects=self.effects, model=self)
        return StepReport(requests=sum(counts), kills=kills)

    def _outages(self, serving: dict[str, list[PodCtx]], now: float) -> frozenset[str]:
        """Services without a serving pod for at least ``LONG_OUTAGE_S``: clients stop retrying quietly."""
        for name in self.services:
            if serving.get(name):
                self.down_since.pop(name, None)
            else:
                self.down_since.setdefault(name, now)
        return frozenset(n for n, since in self.down_since.items() if now - since >= LONG_OUTAGE_S)

    def _kills(self) -> list[str]:
        found: list[str] = []
        for uid, pods in self.effects.pod_kills:
            if uid not in self.killed:
                self.killed.add(uid)
                found.extend(pods)
        return sorted(set(found))

    def start_failure_of(self, pod: PodView, container: str) -> tuple[str, str, str | None] | None:
        """(exit reason, cause, env var) if this container exits at start now, for the runtime."""
        service = self.services.get(pod.workload)
        spec = pod.container(container)
        if service is None or spec is None or container != service.container_name:
            return None
        found = start_failure(
            service=service,
            spec=spec,
            build=self.registry.lookup(spec.image),
            pod=pod,
            effects=self.effects,
            required=self.required[service.name],
        )
        return None if found is None else (found.reason, found.cause, found.var)
