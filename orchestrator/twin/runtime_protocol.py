"""The seam between the twin's pod lifecycle (Kubernetes side) and the application model (runtime side).

The controllers own pod state, restart counts, backoff and events; the runtime only answers what a
container would do right now, derived from the cluster state it can see (images, env, limits, chaos).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ContainerVerdict:
    """What one container of one pod does at one instant. The defaults describe a healthy container.

    ``exit_reason`` set while the container runs means it dies now (e.g. ``"OOMKilled"`` under a memory
    limit too low, ``"Error"`` on a crash); with ``starts=False`` it is the reason of the exit at start.
    ``exit_message`` becomes ``lastState.terminated.message`` (a real kubelet shows the last log line).
    ``live=False`` fails the container's liveness probe (if it has one): after ``failureThreshold`` periods
    the kubelet kills it (exit 137) and restarts it with the usual backoff.
    """

    image_known: bool = True
    starts: bool = True
    exit_reason: str | None = None
    exit_message: str | None = None
    ready: bool = True
    schedulable: bool = True
    exit_code: int | None = None
    live: bool = True  # liveness probe outcome: failing past its threshold gets the container killed


class PodRuntime(Protocol):
    """Implemented by the application model; asked once per container per step, and on scheduling."""

    def verdict(self, pod: dict[str, Any], container: dict[str, Any], now: float) -> ContainerVerdict:
        """The verdict for ``container`` (an item of ``pod.spec.containers``) at simulated time ``now``.

        ``pod`` is the stored object: read it, never mutate it.
        """
        ...
