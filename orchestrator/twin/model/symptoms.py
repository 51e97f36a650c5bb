"""Symptoms derived from state: can a pod start, is it ready, can it reach a callee (no side effects).

Every answer here comes from the objects in the snapshot compared with the topology: the address a
caller's env var names against the callee's Service, the credential env against the datastore's expected
value, a Redis or Valkey server's own authentication settings against the credentials its client's address
carries, a required env var against emptiness, the image against the registry, the probe port against the
container's ports, the memory limit against the working set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.catalog.topology import Service, ServiceKind, Topology, parse_address
from orchestrator.twin.model import redis_auth
from orchestrator.twin.model.chaos import Effects
from orchestrator.twin.model.registry import Build, ImageRegistry
from orchestrator.twin.model.state import ContainerSpec, PodView, Snapshot, endpoints

MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Reach:
    """How a call from one caller pod to a callee service goes before the callee does any work."""

    cause: str | None  # None: reachable; else connection_refused | dns_failure | timeout | auth_failed
    host: str
    port: str
    ip: str
    env_var: str | None = None
    detail: str = ""  # for auth_failed: the value the caller presents
    # for auth_failed: the key of the server's reply in ``messages.AUTH_DETAILS``, when the model knows it
    auth_reply: str | None = None


@dataclass(frozen=True)
class StartFailure:
    reason: str  # "Error" | "OOMKilled"
    cause: str  # message cause (missing_config, code_crash, oom, pod_failure)
    var: str | None = None


def service_ip(shot: Snapshot, name: str) -> str:
    """The Service's clusterIP, or a stable made-up one when the store assigned none."""
    view = shot.services.get(name)
    if view is not None and view.cluster_ip and view.cluster_ip != "None":
        return view.cluster_ip
    code = sum(ord(c) * (i + 1) for i, c in enumerate(name))
    return f"10.96.{code % 250 + 1}.{(code // 250) % 250 + 1}"


class TopologyIndex:
    """What ``reach`` asks of the topology on every call, computed once: address vars and host names."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.addresses: dict[tuple[str, str], tuple[str, str]] = {}
        for service in topology.services:
            for var, target in sorted(topology.address_targets(service.name).items()):
                self.addresses.setdefault((service.name, target), (var, service.address_env[var]))
        self.hosts = {alias: s.name for s in topology.services for alias in (s.name, *s.aliases)}
        self.services = {s.name: s for s in topology.services}

    def address_var(self, caller: str, callee: str) -> tuple[str, str] | None:
        """The (env var, expected value) by which ``caller`` finds ``callee``, if the topology names one."""
        return self.addresses.get((caller, callee))


_KEY_HOST = re.compile(r"(?:^|[\s;])host=([^\s;]+)", re.IGNORECASE)


def _host_port(value: str) -> tuple[str, str] | None:
    """(host as written, port) of an address value: ``host:port``, a URL, ``host:port,opt=x`` (the
    StackExchange.Redis form) or ``Host=x;...`` connection strings; None when it names no host."""
    text = value.strip()
    if "://" in text:
        text = text.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    elif "," in text:
        text = text.split(",", 1)[0]
    elif "=" in text:
        match = _KEY_HOST.search(text)
        if match is None:
            return None
        text = match.group(1)
    host, _, port = text.partition(":")
    host = host.lower()
    if not host or "$" in host or (port and not port.isdigit()):
        return None
    address = parse_address(value)
    if address is not None and address.port is not None and not port:
        port = str(address.port)
    return host, port


def resolve(host: str, namespace: str) -> str | None:
    """The Service name a host resolves to from a pod of ``namespace``, or None (no such host)."""
    name, _, rest = host.rstrip(".").partition(".")
    if rest in ("", namespace, f"{namespace}.svc", f"{namespace}.svc.cluster.local"):
        return name
    return None


def fqdn(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.svc.cluster.local"


def _service_port_ok(shot: Snapshot, callee: str, port: str) -> bool:
    view = shot.services.get(callee)
    return view is not None and (not port or any(str(p) == port for p, _ in view.ports))


def _target_port_ok(shot: Snapshot, callee: str, port: str, pods: list[PodView]) -> bool:
    """The Service's targetPort for ``port`` must name a container port of the pods behind it."""
    view = shot.services.get(callee)
    if view is None or not pods:
        return False
    targets = [t for p, t in view.ports if not port or str(p) == port] or [t for _, t in view.ports]
    return any(t in c.ports for t in targets for pod in pods for c in pod.containers)


def reach(
    *,
    index: TopologyIndex,
    shot: Snapshot,
    effects: Effects,
    caller: Service,
    caller_pod: PodView | None,
    callee: str,
    consulted: list[str] | None = None,
) -> Reach:
    """How calls from ``caller_pod`` to ``callee`` fare at the network level (no side effects beyond
    ``consulted``, to which the Service whose endpoints the answer depends on is appended)."""
    found = index.address_var(caller.name, callee)
    host, port = callee, ""
    var: str | None = None
    wrong_secret = False
    presented = ""  # the address value the caller dials with, credentials and all
    if found is not None:
        var, expected = found
        host, port = _host_port(expected) or (callee, "")
        spec = caller_pod.container(caller.container_name) if caller_pod is not None else None
        actual = spec.env.get(var) if spec is not None else expected
        presented = actual if actual is not None else expected
        if actual is not None and actual != expected:
            parsed = _host_port(actual)
            if parsed is None:
                return Reach("dns_failure", actual, "", "", var)
            # Same host and port but a different string: the credentials embedded in it changed.
            wrong_secret = parsed == (host, port)
            host, port = parsed
    target = resolve(host, shot.namespace)
    if target is None or target not in shot.services:
        return Reach("dns_failure", host, port, "", var)
    if caller_pod is not None and effects.dns_fails(caller_pod.name, fqdn(target, shot.namespace)):
        return Reach("dns_failure", host, port, "", var)
    ip = service_ip(shot, target)
    if not port and shot.services[target].ports:
        port = str(shot.services[target].ports[0][0])
    pods = endpoints(shot, target)
    if consulted is not None:
        consulted.append(target)
    if index.hosts.get(target) != callee:
        # The address names another Service: its server does not implement the callee's methods.
        cause = "upstream_error" if pods and _service_port_ok(shot, target, port) else "connection_refused"
        return Reach(cause, host, port, ip, var)
    if not _service_port_ok(shot, target, port):
        return Reach("connection_refused", host, port, ip, var)
    if not pods:
        return Reach("no_endpoints", host, port, ip, var)
    if not _target_port_ok(shot, target, port, pods):
        return Reach("connection_refused", host, port, ip, var)
    callee_service = index.services[callee]
    if caller_pod is not None and callee_service.kind in (ServiceKind.DATASTORE, ServiceKind.QUEUE):
        kind = callee_service.datastore_kind
        if kind in ("redis", "valkey"):
            reply = _redis_refusal(callee_service, pods, kind, presented)
            if reply is not None:
                return Reach("auth_failed", host, port, ip, var, detail=presented, auth_reply=reply)
        elif wrong_secret:
            return Reach("auth_failed", host, port, ip, var, detail=presented)
        spec = caller_pod.container(caller.container_name)
        for cred, expected in sorted(caller.credential_env.items()):
            if spec is not None and spec.env.get(cred) != expected:
                return Reach("auth_failed", host, port, ip, cred)
    return Reach(None, host, port, ip, var)


def _redis_refusal(server: Service, pods: list[PodView], kind: str, presented: str) -> str | None:
    """The ``AUTH_DETAILS`` key of the reply with which the server's pods refuse ``presented``, or None when
    one of them logs the client in (a client's connection lands on any endpoint)."""
    credentials = redis_auth.credentials(presented)
    replies: list[str] = []
    for pod in pods:
        spec = pod.container(server.container_name)
        users = redis_auth.server_users(redis_auth.server_argv(spec, kind)) if spec is not None else None
        refused = redis_auth.refusal(users or {"default": redis_auth.OPEN_DEFAULT}, credentials)
        if refused is None:
            return None
        replies.append(kind if refused == "wrongpass" else f"{kind}-{refused}")
    return replies[0] if replies else None


def required_vars(service: Service) -> tuple[str, ...]:
    """Env vars a service cannot start without: every address and credential it is configured with."""
    return tuple(sorted({*service.address_env, *service.credential_env}))


def start_failure(
    *,
    service: Service,
    spec: ContainerSpec,
    build: Build | None,
    pod: PodView,
    effects: Effects,
    required: tuple[str, ...] | None = None,
) -> StartFailure | None:
    """Why this container exits at start, or None if it starts (no side effects). ``required`` is
    ``required_vars(service)`` when the caller keeps it."""
    if pod.name in effects.failing:
        return StartFailure("Error", "pod_failure")
    for var in required_vars(service) if required is None else required:
        if spec.env.get(var) is None:
            return StartFailure("Error", "missing_config", var)
    if build is not None and build.behaviour is not None and build.behaviour.crash_on_start:
        return StartFailure("Error", "code_crash")
    if spec.memory_limit is not None and service.model.memory_base_mib * MIB > spec.memory_limit:
        return StartFailure("OOMKilled", "oom")
    return None


def probe_ok(spec: ContainerSpec) -> bool:
    """A readiness probe passes when its port is one the container listens on (or it has no port)."""
    return spec.readiness_port is None or spec.readiness_port in spec.ports


def build_of(registry: ImageRegistry, spec: ContainerSpec) -> Build | None:
    return registry.lookup(spec.image)
