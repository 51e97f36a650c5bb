"""Datastore and queue exporter figures (clients, commands, memory, slow queries, consumer lag)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.catalog.topology import ServiceKind
from orchestrator.twin.model.state import Snapshot
from orchestrator.twin.model.traffic import PodCtx

if TYPE_CHECKING:
    from orchestrator.twin.model.engine import AppModel


@dataclass
class DatastoreStats:
    up: bool = True
    clients: int = 0
    commands: float = 0.0
    command_seconds: float = 0.0
    memory: float = 0.0
    memory_limit: float = 0.0
    slow: float = 0.0
    lag: dict[tuple[str, str], float] = field(default_factory=dict)  # (consumer group, topic) -> messages


def account_datastores(
    model: AppModel, shot: Snapshot, serving: dict[str, list[PodCtx]], counts: list[int]
) -> None:
    """Exporter-style counters of every datastore and queue after a step."""
    dt = model.step_seconds
    for name, service in model.services.items():
        if service.kind not in (ServiceKind.DATASTORE, ServiceKind.QUEUE):
            continue
        stats = model.datastores.setdefault(name, DatastoreStats())
        ctxs = serving.get(name) or []
        stats.up = bool(ctxs)
        rps = sum(c.rps for c in ctxs)
        stats.commands += rps * dt
        stats.command_seconds += rps * dt * service.model.base_latency_ms / 1000.0
        callers = model.callers.get(name, set())
        stats.clients = sum(len(shot.pods.get(c, [])) for c in callers) if ctxs else 0
        used = [model.usage.get((c.name, service.container_name)) for c in ctxs]
        stats.memory = sum(u.working_set for u in used if u is not None)
        stats.memory_limit = sum(u.memory_limit or 0.0 for u in used if u is not None)
        slow = [model.effects.io.get(c.name) for c in ctxs]
        stats.slow += sum(
            c.rps * dt * io[1] for c, io in zip(ctxs, slow, strict=True) if io is not None and io[0] >= 1.0
        )
        if service.kind is ServiceKind.QUEUE:
            produced = sum(n * per.get(name, 0.0) for n, per in zip(counts, model.expected, strict=True))
            _lag(model, stats, name, produced, serving)


def _lag(
    model: AppModel, stats: DatastoreStats, queue: str, produced: float, serving: dict[str, list[PodCtx]]
) -> None:
    """Consumer lag: it drains while the consumer and the broker serve, and grows while either is down."""
    for flow in model.topology.background:
        for call in flow.calls:
            if call.to != queue:
                continue
            key = (flow.service, call.op.split()[-1])
            lag = stats.lag.get(key, 0.0)
            if model.flags.queue_factor.get(queue):
                stats.lag[key] = lag + produced * min(model.flags.queue_factor[queue], 100.0) * 0.05
            elif serving.get(flow.service) and serving.get(queue):
                stats.lag[key] = round(lag * 0.3 + model.workload_rng.random() * 3.0, 1)
            else:
                stats.lag[key] = lag + produced
