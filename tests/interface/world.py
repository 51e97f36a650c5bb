"""A running twin with the agent interface over it: the backend, a stepped schedule clock, the journal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.bundle.records import AlertRecord, Record
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.interface.backend import Backend, build_backend
from orchestrator.interface.calls import ToolCaller
from orchestrator.telemetry.querying import Querier
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.timefmt import EPOCH

WARMUP_S = 60.0


@dataclass
class World:
    twin: RunningTwin
    backend: Backend
    records: list[Record]
    alerts: list[AlertRecord] = field(default_factory=list)
    t: float = 0.0

    def now_s(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.twin.advance(seconds)
        self.t += seconds

    @property
    def kube(self) -> KubeClient:
        return self.backend.kube

    def deployment(self, name: str) -> dict[str, object]:
        return self.kube.read(ObjectRef("Deployment", self.backend.namespace, name))

    def caller(self, invocation: int = 0) -> ToolCaller:
        caller = ToolCaller(self.backend, self.records.append)
        caller.begin(invocation)
        return caller

    def kinds(self) -> list[str]:
        return [r.kind for r in self.records]


@contextmanager
def running_world(
    app: str,
    *,
    directory: Path,
    seed: int = 7,
    remote_write_url: str | None = None,
    querier: Querier | None = None,
) -> Iterator[World]:
    """Boot ``app``'s twin, warm it up, and wire a backend whose schedule origin is the twin's epoch."""
    twin = start_twin(app, seed=seed, kubeconfig=directory / "kubeconfig", remote_write_url=remote_write_url)
    try:
        holder: list[World] = []
        backend = build_backend(
            app,
            kube=KubeClient.from_kubeconfig(twin.kubeconfig),
            now_s=lambda: holder[0].now_s(),
            origin_epoch_s=EPOCH.timestamp(),
            alerts=lambda: tuple(holder[0].alerts),
            traces_url=twin.url,
            querier=querier,
        )
        world = World(twin=twin, backend=backend, records=[])
        holder.append(world)
        world.advance(WARMUP_S)
        yield world
    finally:
        twin.stop()
