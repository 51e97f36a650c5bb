"""Application topologies: the services of an app, their call graph per user route, and affected scope.

A topology file (``manifests/<app>/topology.yaml``) is the one description of an application that the
catalog, the twin, the scorer and the agent tools share. ``affected_scope`` is computed from it, never
written by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from orchestrator.catalog.yamlfile import Loc

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

DatastoreKind = Literal["redis", "valkey", "mysql", "postgresql", "mongodb", "kafka", "rabbitmq", "nacos"]


class ServiceKind(StrEnum):
    SERVICE = "service"
    DATASTORE = "datastore"
    QUEUE = "queue"
    GATEWAY = "gateway"
    LOADGEN = "loadgen"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Port(_Strict):
    name: str = Field(pattern=_DNS_LABEL, max_length=15)
    container_port: int = Field(ge=1, le=65535)
    service_port: int | None = Field(default=None, ge=1, le=65535)
    protocol: Literal["HTTP", "gRPC", "TCP", "Redis", "MySQL", "PostgreSQL", "Kafka", "AMQP"] = "TCP"
    node_port: int | None = Field(default=None, ge=30000, le=32767)

    @property
    def exposed_port(self) -> int:
        """The port the Kubernetes Service listens on."""
        return self.service_port or self.container_port


class Quantities(_Strict):
    cpu: str | None = None
    memory: str | None = None


class Resources(_Strict):
    requests: Quantities = Quantities()
    limits: Quantities = Quantities()


class Probe(_Strict):
    type: Literal["httpGet", "grpc", "tcpSocket", "exec"]
    port: int | None = None
    path: str | None = None
    initial_delay_s: int = 0
    period_s: int = 10
    timeout_s: int = Field(default=1, ge=1)
    failure_threshold: int = Field(default=3, ge=1)
    headers: dict[str, str] = {}
    command: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _complete(self) -> Probe:
        if self.type == "exec" and not self.command:
            raise ValueError("an exec probe needs a command")
        if self.type != "exec" and self.port is None:
            raise ValueError(f"a {self.type} probe needs a port")
        if self.type == "httpGet" and not self.path:
            raise ValueError("an httpGet probe needs a path")
        return self


class Model(_Strict):
    """Parameters the twin's application model uses for this service (not part of any real manifest)."""

    base_latency_ms: float = Field(default=5.0, gt=0)
    cpu_ms_per_request: float = Field(default=2.0, gt=0)
    memory_base_mib: float = Field(default=40.0, gt=0)
    memory_per_rps_mib: float = Field(default=0.2, ge=0)
    startup_s: float = Field(default=8.0, ge=0)


# A second container in the service's pods (e.g. flagd's editing UI).
class Sidecar(_Strict):
    name: str = Field(pattern=_DNS_LABEL, max_length=63)
    image: str
    ports: tuple[Port, ...] = ()
    resources: Resources = Resources()
    env: dict[str, str] = {}


class Service(_Strict):
    name: str = Field(pattern=_DNS_LABEL, max_length=63)
    kind: ServiceKind = ServiceKind.SERVICE
    language: str
    image: str
    container: str | None = None
    ports: tuple[Port, ...] = ()
    replicas: int = Field(default=1, ge=0)
    resources: Resources = Resources()
    env: dict[str, str] = {}
    address_env: dict[str, str] = {}
    credential_env: dict[str, str] = {}
    readiness: Probe | None = None
    liveness: Probe | None = None
    datastore_kind: DatastoreKind | None = None
    site: str | None = None
    model: Model = Model()
    # Env vars whose value Kubernetes fills from the pod itself (name -> fieldPath), e.g. the node's IP.
    field_env: dict[str, str] = {}
    command: tuple[str, ...] = ()
    sidecars: tuple[Sidecar, ...] = ()
    # Whether a Kubernetes Service fronts the pods; a few workers (queue consumers, pollers) have none.
    kube_service: bool = True
    service_type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = "ClusterIP"
    # Further Service names selecting the same pods, e.g. a database's leader endpoint.
    aliases: tuple[str, ...] = ()
    # What runs the pods. A StatefulSet's pods are <name>-<ordinal>; its governing Service is
    # ``governing_service`` (rendered headless) or, when that is unset, the service's own Service.
    workload: Literal["Deployment", "StatefulSet"] = "Deployment"
    governing_service: str | None = Field(default=None, pattern=_DNS_LABEL, max_length=63)
    # What the service says it was doing when a call fails (op -> its own error wrapping, as its code words
    # it); a call missing here reads "failed to call <op>".
    call_context: dict[str, str] = {}

    @property
    def container_name(self) -> str:
        return self.container or self.name

    @property
    def all_ports(self) -> tuple[Port, ...]:
        """The main container's ports, then every sidecar's."""
        return self.ports + tuple(port for sidecar in self.sidecars for port in sidecar.ports)


class Call(_Strict):
    """One call in a route's call tree. A non-critical call degrades without failing its caller."""

    to: str
    op: str
    critical: bool = True
    count: int = Field(default=1, ge=1)
    # The fraction of the caller's requests that make this call (a branch, an optional step).
    share: float = Field(default=1.0, gt=0, le=1)
    timeout_ms: float | None = Field(default=None, gt=0)
    calls: tuple[Call, ...] = ()


class Route(_Strict):
    name: str
    weight: float = Field(gt=0)
    calls: tuple[Call, ...] = ()


class Flow(_Strict):
    """Work a service starts on its own (a queue consumer, a heartbeat, a poller), at a steady rate.

    A queue is called by its producers' routes and by its consumers' flows: a broken queue reaches both,
    a broken consumer never reaches the producer.
    """

    name: str
    service: str
    rate_per_second: float = Field(gt=0)
    calls: tuple[Call, ...] = ()


class FeatureFlag(_Strict):
    """A flag served by the app's flag service; ``service`` is the one whose behaviour it changes."""

    name: str
    service: str
    also_affects: tuple[str, ...] = ()
    default_variant: str
    variants: dict[str, bool | int | float | str]
    description: str

    @model_validator(mode="after")
    def _default_is_a_variant(self) -> FeatureFlag:
        if self.default_variant not in self.variants:
            raise ValueError(f"default_variant {self.default_variant!r} is not one of the variants")
        return self


class Node(_Strict):
    name: str
    zone: str


class PublishedConcurrency(_Strict):
    """Simultaneously active faults of the app's published marathon schedule, to compare a plan with."""

    average: float = Field(gt=0)
    peak: int = Field(ge=1)


class PublishedSchedule(_Strict):
    """Fault arrivals and a cap on active faults with which the app's plans (seeds 1-50) come within 0.5 of
    the published average concurrency and 1 of its peak (README, "Concurrency"); a run or ``marathon
    schedule`` uses them unless told otherwise (``orchestrator.schedule.default_load``)."""

    fault_count: int = Field(ge=0)
    max_concurrent: int | None = Field(default=None, ge=1)


class Site(_Strict):
    name: str
    zone: str
    role: Literal["active", "standby"]


@dataclass(frozen=True)
class Address:
    """Where an address env var points: a host (a Service name) and, when written, a port."""

    host: str
    port: int | None


_HOST_KEY = re.compile(r"(?:^|[\s;])host=([^\s;]+)", re.IGNORECASE)
_IPV4 = re.compile(r"[0-9]+(\.[0-9]+){3}")


def parse_address(value: str) -> Address | None:
    """The host and port of an address value, or None when it names no host (no side effects).

    Reads ``host:port``, bare hosts, URLs (``postgres://u:p@x/db``) and key-value connection strings
    (``Host=x;Username=u``); a cluster-local FQDN is cut to its first label, the Service name.
    """
    text = value.strip()
    port: int | None = None
    if "://" in text:
        parts = urlsplit(text)
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:
            return None
    elif "=" in text:
        match = _HOST_KEY.search(text)
        host = match.group(1) if match else ""
    else:
        host, _, port_text = text.partition(":")
        if port_text:
            if not port_text.isdigit():
                return None
            port = int(port_text)
    if not _IPV4.fullmatch(host):
        host = host.split(".", 1)[0].lower()
    if not host or "$" in host:
        return None
    return Address(host=host, port=port)


class Topology(_Strict):
    app: str
    namespace: str
    version: str
    entry_point: str
    loadgen: str | None = None
    requests_per_second: float = Field(default=10.0, gt=0)
    nodes: tuple[Node, ...]
    sites: tuple[Site, ...] = ()
    services: tuple[Service, ...]
    routes: tuple[Route, ...]
    background: tuple[Flow, ...] = ()
    feature_flags: tuple[FeatureFlag, ...] = ()
    # The service that serves ``feature_flags`` (its flag file is rendered from them).
    feature_flag_service: str | None = None
    published_concurrency: PublishedConcurrency | None = None
    published_schedule: PublishedSchedule | None = None

    @model_validator(mode="after")
    def _references_resolve(self, info: ValidationInfo) -> Topology:
        # A file loader asks to defer this check so it can report each problem at its own line.
        if isinstance(info.context, dict) and info.context.get("defer_references"):
            return self
        errors = self.reference_errors()
        if errors:
            raise ValueError("; ".join(f"{'.'.join(map(str, loc))}: {message}" for loc, message in errors))
        return self

    def reference_errors(self) -> list[tuple[Loc, str]]:
        """Every name that does not resolve, with the location of the field holding it (no side effects)."""
        errors: list[tuple[Loc, str]] = []
        names: set[str] = set()
        hosts: dict[str, Service] = {}
        for index, service in enumerate(self.services):
            if service.name in names:
                errors.append((("services", index, "name"), f"service {service.name!r} is declared twice"))
            names.add(service.name)
            for host in (service.name, *service.aliases):
                hosts.setdefault(host, service)
        for field in ("entry_point", "loadgen", "feature_flag_service"):
            value = getattr(self, field)
            if value is not None and value not in names:
                errors.append(((field,), f"{field} {value!r} is not a service"))
        site_names = {site.name for site in self.sites}
        calls = self.calls_by_caller()
        for index, service in enumerate(self.services):
            if service.site is not None and service.site not in site_names:
                errors.append((("services", index, "site"), f"site {service.site!r} is not declared"))
            errors += [
                (("services", index, "call_context", op), f"{service.name} makes no call {op!r}")
                for op in service.call_context
                if op not in calls.get(service.name, ())
            ]
            for env, value in service.address_env.items():
                message = _address_error(value, hosts)
                if message is not None:
                    errors.append((("services", index, "address_env", env), message))
        for index, route in enumerate(self.routes):
            errors.extend(_call_errors(route.calls, ("routes", index), names))
        for index, flow in enumerate(self.background):
            if flow.service not in names:
                errors.append((("background", index, "service"), f"unknown service {flow.service!r}"))
            errors.extend(_call_errors(flow.calls, ("background", index), names))
        for index, flag in enumerate(self.feature_flags):
            named: list[tuple[Loc, str]] = [(("service",), flag.service)]
            named += [(("also_affects", position), other) for position, other in enumerate(flag.also_affects)]
            errors += [
                (("feature_flags", index, *at), f"unknown service {n!r}") for at, n in named if n not in names
            ]
        return errors

    def service(self, name: str) -> Service:
        for service in self.services:
            if service.name == name:
                return service
        raise KeyError(name)

    @property
    def service_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.services)

    def edges(self) -> frozenset[tuple[str, str, bool]]:
        """Every (caller, callee, critical) edge of every route and background flow.

        The entry point makes a route's first-level calls; a flow's service makes the flow's.
        """
        found: set[tuple[str, str, bool]] = set()
        for route in self.routes:
            found.update(_edges(self.entry_point, route.calls))
        for flow in self.background:
            found.update(_edges(flow.service, flow.calls))
        return frozenset(found)

    def calls_by_caller(self) -> dict[str, frozenset[str]]:
        """For each service that makes calls, the ops it calls, over every route and flow."""
        found: dict[str, set[str]] = {}
        starts = [(self.entry_point, r.calls) for r in self.routes]
        starts += [(flow.service, flow.calls) for flow in self.background]
        for caller, calls in starts:
            for who, op in _ops(caller, calls):
                found.setdefault(who, set()).add(op)
        return {caller: frozenset(ops) for caller, ops in found.items()}

    def resolve_host(self, host: str) -> str | None:
        """The service a host name reaches (its own name or one of its aliases), or None."""
        for service in self.services:
            if host == service.name or host in service.aliases:
                return service.name
        return None

    def address_targets(self, name: str) -> dict[str, str]:
        """For one service, each address env var and the service it points at (no side effects)."""
        found: dict[str, str] = {}
        for env, value in self.service(name).address_env.items():
            address = parse_address(value)
            target = self.resolve_host(address.host) if address is not None else None
            if target is not None:
                found[env] = target
        return found


def _address_error(value: str, hosts: dict[str, Service]) -> str | None:
    address = parse_address(value)
    if address is None:
        return f"{value!r} names no host"
    target = hosts.get(address.host)
    if target is None:
        return f"host {address.host!r} is not a service of this app"
    exposed = {port.exposed_port for port in target.all_ports}
    if address.port is not None and address.port not in exposed:
        return f"port {address.port} is not a port of service {target.name!r}"
    return None


def _call_errors(calls: tuple[Call, ...], loc: Loc, names: set[str]) -> Iterator[tuple[Loc, str]]:
    for index, call in enumerate(calls):
        here: Loc = (*loc, "calls", index)
        if call.to not in names:
            yield ((*here, "to"), f"calls unknown service {call.to!r}")
        yield from _call_errors(call.calls, here, names)


def _ops(caller: str, calls: tuple[Call, ...]) -> Iterator[tuple[str, str]]:
    for call in calls:
        yield (caller, call.op)
        yield from _ops(call.to, call.calls)


def _edges(caller: str, calls: tuple[Call, ...]) -> Iterator[tuple[str, str, bool]]:
    for call in calls:
        yield (caller, call.to, call.critical)
        yield from _edges(call.to, call.calls)


def affected_scope(topology: Topology, target: str) -> frozenset[str]:
    """The target plus every service that can see its symptoms through the call graph (no side effects).

    Symptoms travel from callee to caller, over critical and non-critical edges alike (a caller of a
    non-critical dependency still logs its errors and waits for its timeouts). A datastore's scope is its
    users and their callers, which the same walk gives. The load generator is never in scope: it is part of
    the benchmark, not of the application.
    """
    if target not in topology.service_names:
        raise KeyError(target)
    callers: dict[str, set[str]] = {}
    for caller, callee, _critical in topology.edges():
        callers.setdefault(callee, set()).add(caller)
    scope = {target}
    frontier = [target]
    while frontier:
        current = frontier.pop()
        for caller in sorted(callers.get(current, ())):
            if caller not in scope:
                scope.add(caller)
                frontier.append(caller)
    excluded = {s.name for s in topology.services if s.kind is ServiceKind.LOADGEN}
    return frozenset(scope - excluded)


def known_scope(topology: Topology, service: str) -> frozenset[str]:
    """``affected_scope`` of a service of the topology; nothing for a name it does not know (no side
    effects)."""
    return affected_scope(topology, service) if service in topology.service_names else frozenset()


def topology_path(app: str, *, root: Path) -> Path:
    return root / "manifests" / app / "topology.yaml"
