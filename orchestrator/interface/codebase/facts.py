"""What a service's source is generated from: the endpoints it serves, the calls each makes, its background
jobs, its dependencies and the settings its manifest gives it, all read from the topology (no side effects).

Every tuple keeps the order of the topology file, so nothing depends on set or hash order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.catalog.topology import Call, ServiceKind, Topology
from orchestrator.interface.codebase.names import words

_HTTP = re.compile(r"^([A-Z]+) (/\S*)$")
_GRPC = re.compile(r"^([A-Za-z0-9_.]+)\.([A-Za-z0-9_]+)/([A-Za-z0-9_]+)$")
_SQL = re.compile(r"^(SELECT|INSERT|UPDATE|DELETE) (\S+)$")
_QUEUE = re.compile(r"^(consume|produce|publish) (\S+)$")
_STORES = {
    "redis": "redis",
    "valkey": "redis",
    "mysql": "sql",
    "postgresql": "sql",
    "kafka": "queue",
    "rabbitmq": "queue",
    "nacos": "registry",
}


@dataclass(frozen=True)
class Op:
    """One operation as a caller names it: a gRPC method, an HTTP route, a store command or a queue verb."""

    text: str
    protocol: str  # grpc | http | redis | sql | queue | registry | other
    verb: str  # the gRPC method, HTTP method, store command or queue verb
    subject: str  # the HTTP path, table, topic or key ('' for gRPC)
    package: str = ""  # gRPC package, e.g. hipstershop
    interface: str = ""  # gRPC service, e.g. CartService

    def resource(self) -> list[str]:
        """The words naming what the operation is about (no side effects)."""
        if self.protocol == "grpc":
            return words(self.verb)
        if self.protocol == "http":
            found: list[str] = []
            for segment in self.subject.split("/"):
                if (
                    not segment
                    or segment.startswith("{")
                    or segment == "api"
                    or re.fullmatch(r"v\d+", segment)
                ):
                    continue
                parts = [w for w in words(segment) if not re.fullmatch(r"v\d+", w)]
                if parts and parts[-1].endswith("service") and not found:
                    continue
                found.extend(p for p in parts if p != "service")
            return found or ["index"]
        return words(self.subject.rsplit(".", 1)[-1]) or words(self.verb)


def parse_op(text: str, store: str | None = None) -> Op:
    """The parts of an operation name (no side effects); ``store`` is the callee's datastore kind, if any."""
    if match := _HTTP.match(text):
        return Op(text, "http", match.group(1), match.group(2))
    if match := _GRPC.match(text):
        return Op(text, "grpc", match.group(3), "", match.group(1), match.group(2))
    if match := _SQL.match(text):
        return Op(text, "sql", match.group(1), match.group(2))
    if match := _QUEUE.match(text):
        return Op(text, "queue", match.group(1), match.group(2))
    head, _, rest = text.partition(" ")
    return Op(text, _STORES.get(store or "", "other"), head, rest)


@dataclass(frozen=True)
class Step:
    """A call made while serving an endpoint or running a job."""

    callee: str
    op: Op
    critical: bool
    count: int
    timeout_ms: float | None


@dataclass(frozen=True)
class Endpoint:
    op: Op
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Job:
    """Work the service starts by itself: a queue consumer, a poller, a heartbeat."""

    name: str
    rate_per_second: float
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Dependency:
    name: str
    kind: ServiceKind
    protocol: str  # the protocol of its first operation
    store: str | None  # the datastore kind
    env: str | None  # the address env var that names it
    port: int | None
    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Setting:
    env: str
    default: str | None  # None: read as required (a credential, or a value Kubernetes fills in)
    secret: bool = False


@dataclass(frozen=True)
class Facts:
    app: str
    name: str
    language: str
    kind: ServiceKind
    protocol: str  # of the main port: grpc | http | '' (no port)
    port: int | None
    version: str
    endpoints: tuple[Endpoint, ...]
    dependencies: tuple[Dependency, ...]
    jobs: tuple[Job, ...]
    settings: tuple[Setting, ...]
    flags: tuple[str, ...]
    datastore: str | None  # its own datastore kind, for datastores and queues
    workload: tuple[Op, ...] = ()  # the routes a load generator sends to the entry point
    addresses: tuple[tuple[str, str], ...] = ()  # (env var, the service its address names)

    def dependency(self, name: str) -> Dependency:
        return next(d for d in self.dependencies if d.name == name)

    @property
    def interface(self) -> tuple[str, str]:
        """The (package, service) of the gRPC interface it serves, or ('', '')."""
        for endpoint in self.endpoints:
            if endpoint.op.protocol == "grpc":
                return endpoint.op.package, endpoint.op.interface
        return "", ""


def facts_of(topology: Topology, name: str) -> Facts:
    """Everything generation needs to know about service ``name`` (no side effects)."""
    service = topology.service(name)
    stores = {s.name: s.datastore_kind for s in topology.services}
    served: dict[str, dict[tuple[str, str], Step]] = {}

    def step(call: Call) -> Step:
        return Step(call.to, parse_op(call.op, stores[call.to]), call.critical, call.count, call.timeout_ms)

    def walk(calls: tuple[Call, ...]) -> None:
        for call in calls:
            if call.to == name:
                steps = served.setdefault(call.op, {})
                for sub in call.calls:
                    steps.setdefault((sub.to, sub.op), step(sub))
            walk(call.calls)

    for route in topology.routes:
        if name == topology.entry_point:
            steps = served.setdefault(route.name, {})
            for call in route.calls:
                steps.setdefault((call.to, call.op), step(call))
        walk(route.calls)
    for flow in topology.background:
        walk(flow.calls)
    endpoints = tuple(
        Endpoint(parse_op(op, service.datastore_kind), tuple(steps.values())) for op, steps in served.items()
    )
    jobs = tuple(
        Job(flow.name, flow.rate_per_second, tuple(step(call) for call in flow.calls))
        for flow in topology.background
        if flow.service == name
    )
    main = service.ports[0] if service.ports else None
    protocol = {"gRPC": "grpc", "HTTP": "http"}.get(main.protocol, "") if main else ""
    return Facts(
        app=topology.app,
        name=name,
        language=service.language,
        kind=service.kind,
        protocol=protocol,
        port=main.container_port if main else None,
        version=topology.version,
        endpoints=endpoints,
        dependencies=_dependencies(topology, name, endpoints, jobs),
        jobs=jobs,
        settings=_settings(topology, name),
        flags=tuple(f.name for f in topology.feature_flags if name in (f.service, *f.also_affects)),
        datastore=service.datastore_kind,
        workload=tuple(parse_op(r.name) for r in topology.routes)
        if service.kind is ServiceKind.LOADGEN
        else (),
        addresses=tuple(topology.address_targets(name).items()),
    )


def _dependencies(
    topology: Topology, name: str, endpoints: tuple[Endpoint, ...], jobs: tuple[Job, ...]
) -> tuple[Dependency, ...]:
    ops: dict[str, dict[str, Op]] = {}
    for steps in [e.steps for e in endpoints] + [j.steps for j in jobs]:
        for step in steps:
            ops.setdefault(step.callee, {}).setdefault(step.op.text, step.op)
    envs: dict[str, str] = {}
    for env, target in topology.address_targets(name).items():
        envs.setdefault(target, env)
    found = []
    for callee, by_text in ops.items():
        other = topology.service(callee)
        first = next(iter(by_text.values()))
        port = other.ports[0].exposed_port if other.ports else None
        found.append(
            Dependency(
                callee,
                other.kind,
                first.protocol,
                other.datastore_kind,
                envs.get(callee),
                port,
                tuple(by_text.values()),
            )
        )
    return tuple(found)


def _settings(topology: Topology, name: str) -> tuple[Setting, ...]:
    service = topology.service(name)
    found = [Setting(env, value) for env, value in service.env.items()]
    found += [Setting(env, value) for env, value in service.address_env.items()]
    found += [Setting(env, None, secret=True) for env in service.credential_env]
    found += [Setting(env, None) for env in service.field_env]
    return tuple(found)
