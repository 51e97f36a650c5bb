"""What admission reads from a twin's Kubernetes API over a time window: container logs and events, workload
readiness and restart counts. What Prometheus says is read by ``orchestrator.telemetry.observing.Observer``.

Times are the twin's simulated seconds; Prometheus holds the twin's series at ``EPOCH + t``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from orchestrator.cluster.client import KubeClient, workloads_not_ready
from orchestrator.errors import ClusterError
from orchestrator.twin.timefmt import EPOCH, parse_rfc3339

Json = dict[str, Any]
ERROR_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL", "PANIC"})
EPOCH_S = EPOCH.timestamp()


@dataclass(frozen=True)
class Window:
    """(start, end] in simulated seconds."""

    start: float
    end: float

    @property
    def minutes(self) -> float:
        return (self.end - self.start) / 60.0

    def holds(self, t: float) -> bool:
        return self.start < t <= self.end


@dataclass(frozen=True)
class LogView:
    """The lines a set of services printed in a window: whether a message appears, how many errors."""

    lines: tuple[str, ...]

    def contains(self, message: str) -> bool:
        return any(message in line for line in self.lines)

    def errors(self) -> int:
        count = 0
        for line in self.lines:
            parts = line.split(" ", 2)
            if len(parts) > 1 and parts[1] in ERROR_LEVELS:
                count += 1
        return count


def pod_pattern(services: frozenset[str] | set[str]) -> re.Pattern[str]:
    """Pod names of a Deployment (``name-<hash>-<id>``) or StatefulSet (``name-<n>``) of ``services``."""
    names = "|".join(re.escape(name) for name in sorted(services))
    return re.compile(rf"^(?:{names})-(?:[a-z0-9]{{6,10}}-[a-z0-9]{{5}}|\d+)$")


class ClusterReader:
    """Reads one namespace of a twin. Side effects: Kubernetes API reads only."""

    def __init__(self, *, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace

    # -- logs and events ------------------------------------------------------------------------------
    def logs(self, services: frozenset[str] | set[str], window: Window, *, now: float) -> LogView:
        """Lines the pods of ``services`` printed in ``window`` (current and previous container attempts)."""
        since = max(1, math.ceil(now - window.start))
        found: list[str] = []
        for pod in self._pods(services):
            name = pod["metadata"]["name"]
            restarted = {
                status["name"]: status.get("restartCount", 0)
                for status in pod.get("status", {}).get("containerStatuses") or []
            }
            for container in pod["spec"]["containers"]:
                attempts = [False, True] if restarted.get(container["name"], 0) > 0 else [False]
                for previous in attempts:
                    found.extend(self._read(name, container["name"], since=since, previous=previous))
        return LogView(tuple(line for line in found if window.holds(_line_time(line))))

    def _read(self, pod: str, container: str, *, since: int, previous: bool) -> list[str]:
        try:
            text = self.client.read_log(
                namespace=self.namespace, pod=pod, container=container, since_s=since, previous=previous
            )
        except ClusterError:  # the pod went away, or has no previous attempt: nothing to read
            return []
        return text.splitlines()

    def events(self, services: frozenset[str] | set[str], window: Window) -> tuple[str, ...]:
        """Messages of events about the pods of ``services`` last seen in ``window``."""
        pattern = pod_pattern(services)
        messages: list[str] = []
        for event in self.client.list_objects("Event", namespace=self.namespace):
            involved = event.get("involvedObject", {})
            if involved.get("kind") != "Pod" or not pattern.match(involved.get("name", "")):
                continue
            stamp = event.get("lastTimestamp") or event.get("eventTime")
            if stamp and window.holds(parse_rfc3339(str(stamp))):
                messages.append(str(event.get("message", "")))
        return tuple(messages)

    def _pods(self, services: frozenset[str] | set[str]) -> list[Json]:
        pattern = pod_pattern(services)
        return [
            pod
            for pod in self.client.list_pods(self.namespace, selector="")
            if pattern.match(pod["metadata"]["name"]) and not pod["metadata"].get("deletionTimestamp")
        ]

    def restart_counts(self, services: frozenset[str] | set[str]) -> dict[str, int]:
        """Container restarts so far per pod of ``services``."""
        return {
            pod["metadata"]["name"]: sum(
                status.get("restartCount", 0)
                for status in pod.get("status", {}).get("containerStatuses") or []
            )
            for pod in self._pods(services)
        }

    # -- readiness ------------------------------------------------------------------------------------
    def not_ready(self) -> list[str]:
        """The workloads of the namespace that are not fully rolled out and ready (empty when all are)."""
        return workloads_not_ready(self.client, self.namespace)


def _line_time(line: str) -> float:
    stamp = line.split(" ", 1)[0]
    try:
        return parse_rfc3339(stamp)
    except ValueError:
        return math.nan  # a line without a timestamp belongs to no window
