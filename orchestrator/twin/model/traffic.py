"""One step of user traffic: requests walk their route's call tree across the simulated pods.

Latency is the callee's own work (lognormal around its base latency), queueing that grows with its
utilisation, network effects of chaos, and its children's calls in sequence. A failed critical child fails
its caller; a failed non-critical child only costs its time. Every call yields a CLIENT span on the
caller and, for services (not datastores), a SERVER span on the callee.
"""

from __future__ import annotations

import bisect
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.catalog.topology import Call, Service, ServiceKind, Topology
from orchestrator.twin.model.chaos import Effects
from orchestrator.twin.model.flags import FlagEffects
from orchestrator.twin.model.registry import Build
from orchestrator.twin.model.spans import BUCKETS_MS, CLIENT, ERROR, OK, SERVER, Span, SpanMetrics, Trace
from orchestrator.twin.model.state import PodView
from orchestrator.twin.model.symptoms import Reach

# Client deadline when the topology sets none: long enough that only a stuck callee reaches it.
DEFAULT_TIMEOUT_MS = 10_000.0
NETWORK_MS = 0.25
# Client libraries with their own default deadline (StackExchange.Redis syncTimeout, go-redis, ...).
CLIENT_TIMEOUT_MS = {"redis": 5_000.0, "valkey": 5_000.0}
# Past this utilisation an overloaded server sheds a growing share of its requests (queue full, probes
# and keep-alives failing) instead of only getting slower.
SHED_UTILISATION = 1.5
SLOW_REQUEST_MS = 500.0
_SEEN_BY_CALLER = frozenset({"http_abort", "datastore_error"})
SLOW_QUERY_MS = 100.0
OVERLOAD_UTILISATION = 0.9
# Lognormal latency factors (sigma 0.3), drawn by index: as random as gauss() and several times cheaper.
_SPREAD = tuple(math.exp(0.3 * statistics.NormalDist().inv_cdf((i + 0.5) / 4096)) for i in range(4096))
# A TCP retransmission timeout: what one lost segment costs a call.
RTO_MS = 200.0
PAYLOAD_BITS = 8 * 16 * 1024


@dataclass
class PodCtx:
    """One pod serving traffic this step, with what its image and limits make of it."""

    view: PodView
    service: Service
    build: Build | None
    capacity: float = 1.0  # cores available for requests
    rps: float = 0.0
    wait_ms: float = 0.0
    cpu_ms: float = 2.0
    busy: float = 0.0  # cores used by requests this step
    rho: float = 0.0  # utilisation: demand over available cores

    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.view.name  # read on every call: a plain attribute, not a property


@dataclass(slots=True)
class Outcome:
    ok: bool
    ms: float
    cause: str | None = None  # why it failed, as the caller sees it
    code: str = "Internal"


LogFn = Callable[[PodCtx | None, str, str, Reach | None, str], None]


@dataclass
class StepTraffic:
    """The pods, reachability and effects of one step; ``run`` plays one request."""

    topology: Topology
    effects: Effects
    rng: random.Random
    spans: SpanMetrics
    pods: dict[str, list[PodCtx]]  # ready serving pods per service
    reach_of: Callable[[Service, PodCtx | None, str], Reach]
    services: dict[str, Service]
    log: LogFn  # (pod, cause, op, reach, detail)
    flags: FlagEffects = field(default_factory=FlagEffects)
    weight: float = 1.0
    long_down: frozenset[str] = frozenset()
    _net: dict[tuple[str, str], tuple[float, float, float, bool, float]] = field(default_factory=dict)
    _reach: dict[tuple[str, str, str], Reach] = field(default_factory=dict)

    def _network(self, a: str, b: str) -> tuple[float, float, float, bool, float]:
        """(delay ms, jitter ms, loss, partitioned, bandwidth bps) between two pods."""
        found = self._net.get((a, b))
        if found is None:
            delay = jitter = loss = rate = 0.0
            cut = False
            for rule in self.effects.net:
                if not rule.touches(a, b):
                    continue
                if rule.action == "delay":
                    delay += rule.delay_ms
                    jitter += rule.jitter_ms
                elif rule.action == "partition":
                    cut = True
                elif rule.action == "bandwidth":
                    rate = rule.rate_bps if rate == 0 else min(rate, rule.rate_bps)
                else:
                    loss = 1 - (1 - loss) * (1 - rule.loss)
            found = self._net[(a, b)] = (delay, jitter, loss, cut, rate)
        return found

    def _observe(self, service: str, op: str, kind: str, ok: bool, ms: float) -> None:
        key = (service, op, kind, OK if ok else ERROR)
        row = self.spans.series.get(key)
        if row is None:
            self.spans.observe(key, ms, self.weight)
            return
        weight = self.weight
        row[0] += weight
        row[1] += ms * weight
        row[2 + bisect.bisect_left(BUCKETS_MS, ms)] += weight

    def call(
        self,
        caller: PodCtx | None,
        caller_service: Service,
        call: Call,
        *,
        start_ms: float,
        parent: str | None,
        trace: list[Span] | None,
    ) -> Outcome:
        """One call (``count`` times in sequence) from ``caller``; spans and logs are recorded."""
        if call.share < 1.0 and self.rng.random() >= call.share:
            return Outcome(True, 0.0)
        if call.count == 1:
            return self._once(caller, caller_service, call, start_ms=start_ms, parent=parent, trace=trace)
        total = 0.0
        ok = True
        last = Outcome(True, 0.0)
        for _ in range(call.count):
            last = self._once(
                caller, caller_service, call, start_ms=start_ms + total, parent=parent, trace=trace
            )
            total += last.ms
            ok = ok and last.ok
        return Outcome(ok, total, last.cause, last.code)

    def _once(
        self,
        caller: PodCtx | None,
        caller_service: Service,
        call: Call,
        *,
        start_ms: float,
        parent: str | None,
        trace: list[Span] | None,
    ) -> Outcome:
        rng = self.rng
        callee_service = self.services[call.to]
        timeout = call.timeout_ms or CLIENT_TIMEOUT_MS.get(
            callee_service.datastore_kind or "", DEFAULT_TIMEOUT_MS
        )
        key = (caller_service.name, caller.name if caller is not None else "", call.to)
        reach = self._reach.get(key)
        if reach is None:
            reach = self._reach[key] = self.reach_of(caller_service, caller, call.to)
        client_id = f"{rng.getrandbits(64):016x}" if trace is not None else ""
        if reach.cause == "no_endpoints" and call.to in self.long_down:
            reach = Reach("connection_refused", reach.host, reach.port, reach.ip, reach.env_var)
        if reach.cause is not None:
            fast = {
                "connection_refused": 1.0,
                "dns_failure": 2.0,
                "auth_failed": 3.0,
                "upstream_error": 2.0,
                "no_endpoints": 1.0,
            }
            out = Outcome(
                False,
                fast.get(reach.cause, timeout),
                reach.cause,
                "Unimplemented" if reach.cause == "upstream_error" else "Unavailable",
            )
            self._finish(caller, caller_service, call, out, reach, start_ms, parent, client_id, trace)
            return out
        serving = self.pods.get(call.to) or []
        if not serving:
            cause = "connection_refused" if call.to in self.long_down else "no_endpoints"
            out = Outcome(False, 1.0, cause, "Unavailable")
            self._finish(caller, caller_service, call, out, reach, start_ms, parent, client_id, trace)
            return out
        pod = serving[0] if len(serving) == 1 else serving[rng.randrange(len(serving))]
        net = NETWORK_MS
        lost = False
        if self.effects.net and caller is not None:
            delay, jitter, loss, cut, rate = self._network(caller.name, pod.name)
            if cut:
                out = Outcome(False, timeout, "unreachable", "Unavailable")
                self._finish(caller, caller_service, call, out, reach, start_ms, parent, client_id, trace)
                return out
            net += delay + (rng.uniform(-jitter, jitter) if jitter else 0.0)
            if rate:
                net += 1000.0 * PAYLOAD_BITS / rate
            if loss and rng.random() < loss:
                net += RTO_MS
                lost = rng.random() < loss * loss  # the retransmission is lost as well: the peer resets
        server = self._serve(pod, call, start_ms=start_ms + net / 2, parent=client_id, trace=trace)
        ms = max(0.05, net + server.ms)
        if lost:
            out = Outcome(False, ms, "connection_reset", "Unavailable")
        elif ms > timeout:
            out = Outcome(False, timeout, "timeout", "DeadlineExceeded")
        elif not server.ok:
            # What the caller sees: its own failure for a reset or a disk error, else the callee's status.
            seen = server.cause if server.cause in _SEEN_BY_CALLER else "upstream_error"
            out = Outcome(False, ms, seen, server.code)
        else:
            out = Outcome(True, ms)
            if ms > SLOW_QUERY_MS and callee_service.kind is ServiceKind.DATASTORE and caller is not None:
                self.log(caller, "datastore_slow", call.op, reach, f"{ms:.0f}")
        self._finish(caller, caller_service, call, out, reach, start_ms, parent, client_id, trace)
        return out

    def _serve(
        self, pod: PodCtx, call: Call, *, start_ms: float, parent: str, trace: list[Span] | None
    ) -> Outcome:
        """The callee's side: its own work, its children, its build's defects, chaos on it."""
        rng = self.rng
        service = pod.service
        model = service.model
        own = model.base_latency_ms * _SPREAD[rng.getrandbits(12)]
        if pod.wait_ms:
            own -= pod.wait_ms * math.log(1.0 - rng.random())
        ok = True
        cause: str | None = None
        code = "Internal"
        if pod.rho > SHED_UTILISATION and rng.random() > SHED_UTILISATION / pod.rho:
            ok, cause, code = False, "overloaded", "Unavailable"
        behaviour = pod.build.behaviour if pod.build is not None else None
        if behaviour is not None and (not behaviour.ops or call.op in behaviour.ops):
            own += behaviour.extra_latency_ms
            if behaviour.error_ratio and rng.random() < behaviour.error_ratio:
                ok, cause = False, "code_error"
            elif not behaviour.error_ratio and pod.build is not None:
                # A build whose defect costs time or memory still says what it does, as the real one logs.
                self.log(pod, "code_notice", call.op, None, pod.build.log_message or "")
        flagged = self.flags.fault(service.name, call.op) if self.flags.faults else None
        if flagged is not None:
            own += flagged.extra_ms
            if flagged.error_ratio and rng.random() < flagged.error_ratio:
                ok, cause, code = False, "flag_error", flagged.code
                self.log(pod, "code_error", call.op, None, flagged.message)
        io = self.effects.io.get(pod.name)
        if io is not None and rng.random() < io[1]:
            own += io[0] * 1000.0
            if io[2]:
                ok, cause = False, "datastore_error"
        for rule in self.effects.http.get(pod.name, ()):
            if not rule.matches(call.op):
                continue
            own += rule.delay_s * 1000.0
            if rule.abort:
                ok, cause, code = False, "http_abort", "Unavailable"
            elif rule.code is not None and rule.code >= 400:
                ok, cause, code = (
                    False,
                    "upstream_error",
                    "Unavailable" if rule.code >= 500 else "InvalidArgument",
                )
            elif rule.mangled:
                ok, cause, code = False, "mangled", "NotFound"
        server_id = f"{rng.getrandbits(64):016x}" if trace is not None else ""
        elapsed = own
        if ok:
            for child in call.calls:
                result = self.call(
                    pod, service, child, start_ms=start_ms + elapsed, parent=server_id, trace=trace
                )
                elapsed += result.ms
                if not result.ok and child.critical:
                    ok, cause, code = False, "upstream_error", result.code
                    break
        if not ok and cause == "code_error" and pod.build is not None:
            self.log(pod, "code_error", call.op, None, pod.build.log_message or "")
        elif not ok and cause == "mangled":
            # The rewritten request asks for something that does not exist: the first lookup says so.
            first = call.calls[0].op if call.calls else call.op
            self.log(pod, "upstream_error", first, None, "NotFound")
            cause = "upstream_error"
        elif ok and elapsed > SLOW_REQUEST_MS:
            self.log(pod, "slow_request", call.op, None, f"{elapsed:.0f}")
        if service.kind is not ServiceKind.DATASTORE and service.kind is not ServiceKind.QUEUE:
            self._observe(service.name, call.op, SERVER, ok, elapsed)
            if trace is not None:
                trace.append(
                    Span(
                        server_id,
                        parent,
                        service.name,
                        call.op,
                        "server",
                        int(start_ms * 1000),
                        max(1, int(elapsed * 1000)),
                        not ok,
                        {"k8s.pod.name": pod.name},
                    )
                )
        return Outcome(ok, elapsed, cause, code)

    def _finish(
        self,
        caller: PodCtx | None,
        caller_service: Service,
        call: Call,
        out: Outcome,
        reach: Reach,
        start_ms: float,
        parent: str | None,
        client_id: str,
        trace: list[Span] | None,
    ) -> None:
        self._observe(caller_service.name, call.op, CLIENT, out.ok, out.ms)
        if trace is not None:
            trace.append(
                Span(
                    client_id,
                    parent,
                    caller_service.name,
                    call.op,
                    "client",
                    int(start_ms * 1000),
                    max(1, int(out.ms * 1000)),
                    not out.ok,
                    {"peer.service": call.to},
                )
            )
        if not out.ok and out.cause is not None and caller is not None:
            self.log(caller, out.cause, call.op, reach, out.code)


def make_trace(spans: list[Span], *, rng: random.Random, start_us: int) -> Trace:
    return Trace(
        trace_id=f"{rng.getrandbits(128):032x}",
        start_us=start_us,
        spans=sorted(spans, key=lambda s: (s.start_us, s.span_id)),
    )
