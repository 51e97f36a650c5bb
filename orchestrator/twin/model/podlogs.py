"""What the simulated services write to their container logs, each step, from what happened to them.

Callers log failed calls in their language's idiom (rate-limited per pod and cause, as real services'
retry loops still log every few hundred milliseconds); every container logs a startup line per attempt,
a fatal line when it cannot start, a shutdown line when its pod is deleted, and ordinary info lines at a
low rate.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from orchestrator.catalog.topology import Call, Service, Topology
from orchestrator.rng import derive
from orchestrator.twin import timefmt
from orchestrator.twin.logbook import LogBook
from orchestrator.twin.model import messages
from orchestrator.twin.model.chaos import Effects
from orchestrator.twin.model.state import PodView, Snapshot
from orchestrator.twin.model.symptoms import MIB, Reach

if TYPE_CHECKING:
    from orchestrator.twin.model.engine import AppModel
    from orchestrator.twin.model.traffic import PodCtx

# Lines per (pod, cause, op) and step: enough for ">= 10 error log events per minute", bounded under storms.
MAX_LINES_PER_CAUSE = 4
INFO_EVERY_SECONDS = 30.0


@lru_cache(maxsize=1024)
def _second(epoch: datetime, days: int, seconds: int) -> str:
    """The date and time of a whole second after ``epoch``, up to the dot before the milliseconds."""
    return (epoch + timedelta(days=days, seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.")


def stamp(t: float) -> str:
    """RFC 3339 with milliseconds, UTC: how the services format their own log timestamps. The lines of a
    step fall in a few whole seconds, each formatted once; from an epoch that is a whole second, the
    offset's microseconds are the moment's."""
    epoch, offset = timefmt.EPOCH, timedelta(seconds=t)
    if epoch.microsecond:
        moment = epoch + offset
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return f"{_second(epoch, offset.days, offset.seconds)}{offset.microseconds // 1000:03d}Z"


def line(t: float, level: str, message: str) -> str:
    return f"{stamp(t)} {level.upper()} {message}"


def start_message(
    service: Service, cause: str, var: str | None, build_message: str | None, memory_limit: float | None
) -> str:
    """The last line a container writes before exiting at start (also the terminated message)."""
    family = messages.idiom(service.language)
    if cause == "missing_config":
        return messages.render(family, "missing_config", messages.Fill(var=var or ""))
    if cause == "code_crash" and build_message:
        return build_message
    if cause == "oom":
        limit = int((memory_limit or 0) / MIB)
        return f"memory limit {limit}Mi reached during initialisation"
    return "container exited: process terminated"


def _walk(calls: tuple[Call, ...]) -> Iterator[Call]:
    for call in calls:
        yield call
        yield from _walk(call.calls)


class PodLogger:
    def __init__(self, *, topology: Topology, logbook: LogBook, seed: int, step_seconds: float = 5.0) -> None:
        self.topology = topology
        self.namespace = topology.namespace
        self.logbook = logbook
        self.rng = derive(seed, "twin.logs")
        self.step_seconds = step_seconds
        self.services = {s.name: s for s in topology.services}
        self.topology_hosts = {alias: s.name for s in topology.services for alias in (s.name, *s.aliases)}
        self.now = 0.0
        self._counts: dict[tuple[str, str, str], int] = {}
        self._seq: dict[str, int] = {}
        self._started: set[tuple[str, str, float]] = set()
        self._fatal: set[tuple[str, str, int]] = set()
        self._closing: set[str] = set()
        self._shot: Snapshot | None = None
        found: dict[str, set[str]] = {topology.entry_point: {r.name for r in topology.routes}}
        for route in topology.routes:
            for call in _walk(route.calls):
                found.setdefault(call.to, set()).add(call.op)
        self.ops = {name: tuple(sorted(ops)) for name, ops in found.items()}

    def append(self, pod: str, container: str, level: str, message: str) -> None:
        """One line at the next instant of this step for ``pod`` (lines of a pod stay in order)."""
        index = self._seq.get(pod, 0)
        self._seq[pod] = index + 1
        t = self.now - self.step_seconds + min(self.step_seconds - 0.001, 0.05 + 0.037 * index)
        self.logbook.append(
            namespace=self.namespace, pod=pod, container=container, t=t, line=line(t, level, message)
        )

    def begin_step(self, now: float, *, shot: Snapshot, effects: Effects) -> None:
        self.now = now
        self._counts.clear()
        self._seq.clear()
        self._shot = shot
        del effects

    def call_failed(self, pod: PodCtx | None, cause: str, op: str, reach: Reach | None, detail: str) -> None:
        """A failed call as its caller logs it (or, for ``code_error``, the fault build's own message)."""
        if pod is None:
            return
        key = (pod.name, cause, op)
        count = self._counts.get(key, 0)
        if count >= MAX_LINES_PER_CAUSE:
            return
        self._counts[key] = count + 1
        service = pod.service
        if cause in ("code_error", "code_notice"):
            level = "error" if cause == "code_error" else "warning"
            self.append(pod.name, service.container_name, level, detail or f"{op} failed")
            return
        callee_kind = None
        host = port = ip = ""
        auth_variant = None
        if reach is not None:
            host, port, ip = reach.host, reach.port, reach.ip
            callee = self.services.get(self.topology_hosts.get(host, host))
            callee_kind = callee.datastore_kind if callee is not None else None
            if cause == "auth_failed":
                auth_variant = reach.auth_reply
        text = f"{op} failed: {detail or 'internal error'}"
        if cause == "upstream_error" and messages.is_http(op):
            cause = "http_error"
        if cause == "datastore_error":
            text = messages.DATASTORE_ERRORS.get(callee_kind or "", "Input/output error")
        fill = messages.Fill(
            op=op,
            context=service.call_context.get(op, ""),
            host=host,
            port=port,
            ip=ip or "10.96.0.1",
            addr=f"{host}:{port}" if port else host,
            datastore=host,
            code=detail or "Internal",
            status=messages.HTTP_STATUS.get(detail, "500"),
            detail=text,
            ms=detail if cause in ("datastore_slow", "slow_request") else "0",
            self_ip=pod.view.ip or "10.244.1.10",
        )
        family = messages.idiom(service.language)
        self.append(
            pod.name,
            service.container_name,
            messages.level(cause),
            messages.render(family, cause, fill, datastore_kind=callee_kind, auth_variant=auth_variant),
        )

    def end_step(self, now: float, *, shot: Snapshot, effects: Effects, model: AppModel) -> None:
        """Lifecycle lines: startup per attempt, fatal exits, shutdowns, ordinary info and warnings."""
        chance = self.step_seconds / INFO_EVERY_SECONDS
        for pod in shot.all_pods():
            service = self.services.get(pod.workload)
            if service is None:
                continue
            if pod.deleting:
                if pod.name not in self._closing:
                    self._closing.add(pod.name)
                    self._lifecycle(pod, service, "shutdown")
                continue
            main = pod.container(service.container_name)
            if main is None:
                continue
            failure = model.start_failure_of(pod, main.name)
            if failure is not None:
                self._fatal_line(pod, service, main.name, failure, model)
                continue
            started = pod.started.get(main.name)
            if started is not None and (pod.name, main.name, started) not in self._started:
                self._started.add((pod.name, main.name, started))
                self._lifecycle(pod, service, "startup")
            elif started is not None and self.rng.random() < chance and not self._troubled(pod.name):
                self._lifecycle(pod, service, "request_ok")
            notice = model.flags.notices.get(service.name)
            if notice is not None and started is not None and self.rng.random() < chance:
                self.append(pod.name, main.name, "warning", notice)
            usage = model.usage.get((pod.name, main.name))
            if usage is not None and usage.memory_limit and usage.working_set > 0.9 * usage.memory_limit:
                self._lifecycle(pod, service, "memory_pressure", mib=int(usage.working_set / MIB))
        live = {p.name for p in shot.all_pods()}
        self._closing &= live
        self._started = {k for k in self._started if k[0] in live}

    def _troubled(self, pod: str) -> bool:
        return any(name == pod for name, _cause, _op in self._counts)

    def _lifecycle(self, pod: PodView, service: Service, cause: str, *, mib: int = 0) -> None:
        port = ""
        if service.ports:
            port = str(service.ports[0].container_port)
        ops = self.ops.get(service.name) or ("/" + service.name,)
        op = ops[self.rng.randrange(len(ops))]
        ms = f"{service.model.base_latency_ms * (0.6 + self.rng.random()):.1f}"
        fill = messages.Fill(op=op, port=port, ms=ms, mib=str(mib))
        family = messages.idiom(service.language)
        text = messages.render(family, cause, fill)
        self.append(pod.name, service.container_name, messages.level(cause), text)

    def _fatal_line(
        self,
        pod: PodView,
        service: Service,
        container: str,
        failure: tuple[str, str, str | None],
        model: AppModel,
    ) -> None:
        attempt = self.logbook.attempts(namespace=self.namespace, pod=pod.name, container=container)
        key = (pod.name, container, attempt)
        if key in self._fatal:
            return
        self._fatal.add(key)
        reason, cause, var = failure
        spec = pod.container(container)
        build = model.registry.lookup(spec.image) if spec is not None else None
        message = start_message(
            service, cause, var, build.log_message if build else None, spec.memory_limit if spec else None
        )
        self._lifecycle(pod, service, "startup")
        self.append(pod.name, container, "fatal" if cause == "missing_config" else "error", message)
