"""Application topologies: the services of an app, their call graph per user route, and affected scope.

A topology file (``manifests/<app>/topology.yaml``) is the one description of an application that the
catalog, the twin, the scorer and the agent tools share. ``affected_scope`` is computed from it, never
written by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

APPS: tuple[str, ...] = ("online-boutique", "train-ticket", "astronomy-shop")


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
    name: str
    container_port: int = Field(ge=1, le=65535)
    service_port: int | None = Field(default=None, ge=1, le=65535)
    protocol: Literal["HTTP", "gRPC", "TCP", "Redis", "MySQL", "PostgreSQL", "Kafka", "AMQP"] = "TCP"


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


class Model(_Strict):
    """Parameters the twin's application model uses for this service (not part of any real manifest)."""

    base_latency_ms: float = Field(default=5.0, gt=0)
    cpu_ms_per_request: float = Field(default=2.0, gt=0)
    memory_base_mib: float = Field(default=40.0, gt=0)
    memory_per_rps_mib: float = Field(default=0.2, ge=0)
    startup_s: float = Field(default=8.0, ge=0)


class Service(_Strict):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
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

    @property
    def container_name(self) -> str:
        return self.container or self.name


class Call(_Strict):
    """One call in a route's call tree. A non-critical call degrades without failing its caller."""

    to: str
    op: str
    critical: bool = True
    count: int = Field(default=1, ge=1)
    timeout_ms: float | None = Field(default=None, gt=0)
    calls: tuple[Call, ...] = ()


class Route(_Strict):
    name: str
    weight: float = Field(gt=0)
    calls: tuple[Call, ...] = ()


class Node(_Strict):
    name: str
    zone: str


class Site(_Strict):
    name: str
    zone: str
    role: Literal["active", "standby"]


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

    @model_validator(mode="after")
    def _references_resolve(self) -> Topology:
        names = {s.name for s in self.services}
        if len(names) != len(self.services):
            raise ValueError("service names must be unique")
        if self.entry_point not in names:
            raise ValueError(f"entry_point {self.entry_point!r} is not a service")
        if self.loadgen is not None and self.loadgen not in names:
            raise ValueError(f"loadgen {self.loadgen!r} is not a service")
        site_names = {s.name for s in self.sites}
        for service in self.services:
            if service.site is not None and service.site not in site_names:
                raise ValueError(f"service {service.name!r}: site {service.site!r} is not declared")
        for route in self.routes:
            for call in _walk(route.calls):
                if call.to not in names:
                    raise ValueError(f"route {route.name!r} calls unknown service {call.to!r}")
        return self

    def service(self, name: str) -> Service:
        for service in self.services:
            if service.name == name:
                return service
        raise KeyError(name)

    @property
    def service_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.services)

    def edges(self) -> frozenset[tuple[str, str, bool]]:
        """Every (caller, callee, critical) edge of every route; the entry point calls the first level."""
        found: set[tuple[str, str, bool]] = set()
        for route in self.routes:
            found.update(_edges(self.entry_point, route.calls))
        return frozenset(found)


def _walk(calls: tuple[Call, ...]) -> Iterator[Call]:
    for call in calls:
        yield call
        yield from _walk(call.calls)


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


def topology_path(app: str, *, root: Path) -> Path:
    return root / "manifests" / app / "topology.yaml"
