"""Container logs of the twin: lines per container attempt, served through ``pods/log``.

The application model appends lines; the pod lifecycle opens a new attempt at each container (re)start, so
``previous=true`` shows the attempt before the current one, as the kubelet does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from orchestrator.twin.timefmt import rfc3339_nano

# The kubelet rotates container logs at 10 MiB; a line cap per attempt keeps memory bounded the same way.
MAX_LINES_PER_ATTEMPT = 5000
# Attempts kept per container: the current one and the previous one are all `kubectl logs` can reach.
MAX_ATTEMPTS = 2

LogKey = tuple[str, str, str]


@dataclass
class _Container:
    attempts: deque[deque[tuple[float, str]]] = field(
        default_factory=lambda: deque([deque(maxlen=MAX_LINES_PER_ATTEMPT)], maxlen=MAX_ATTEMPTS)
    )
    count: int = 1


class LogBook:
    """Lines per (namespace, pod, container, attempt), each with its simulated timestamp."""

    def __init__(self) -> None:
        self._containers: dict[LogKey, _Container] = {}

    def append(self, *, namespace: str, pod: str, container: str, t: float, line: str) -> None:
        """Append one line to the current attempt of a container (creating it if none was started)."""
        entry = self._containers.get((namespace, pod, container))
        if entry is None:
            entry = self._containers[(namespace, pod, container)] = _Container()
        entry.attempts[-1].append((t, line))

    def start_attempt(self, *, namespace: str, pod: str, container: str) -> None:
        """Open a new attempt: called by the pod lifecycle when a container starts or restarts."""
        entry = self._containers.get((namespace, pod, container))
        if entry is None:
            self._containers[(namespace, pod, container)] = _Container()
            return
        entry.attempts.append(deque(maxlen=MAX_LINES_PER_ATTEMPT))
        entry.count += 1

    def attempts(self, *, namespace: str, pod: str, container: str) -> int:
        """How many attempts this container has had (0 if it never started)."""
        entry = self._containers.get((namespace, pod, container))
        return 0 if entry is None else entry.count

    def forget_pod(self, *, namespace: str, pod: str) -> None:
        """Drop every container log of a deleted pod."""
        for key in [k for k in self._containers if k[0] == namespace and k[1] == pod]:
            del self._containers[key]

    def lines(
        self,
        *,
        namespace: str,
        pod: str,
        container: str,
        previous: bool = False,
        since: float | None = None,
    ) -> list[tuple[float, str]] | None:
        """The lines of the current (or previous) attempt at or after ``since``; None if there is none."""
        entry = self._containers.get((namespace, pod, container))
        if entry is None:
            return None
        if previous:
            if len(entry.attempts) < 2:
                return None
            attempt = entry.attempts[-2]
        else:
            attempt = entry.attempts[-1]
        if since is None:
            return list(attempt)
        return [(t, line) for t, line in attempt if t >= since]

    def render(
        self,
        *,
        namespace: str,
        pod: str,
        container: str,
        previous: bool = False,
        since: float | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
    ) -> str | None:
        """The text ``pods/log`` returns; None when the attempt asked for does not exist."""
        found = self.lines(namespace=namespace, pod=pod, container=container, previous=previous, since=since)
        if found is None:
            return None
        if tail_lines is not None:
            found = found[-tail_lines:] if tail_lines > 0 else []
        if timestamps:
            return "".join(f"{rfc3339_nano(t)} {line}\n" for t, line in found)
        return "".join(f"{line}\n" for _t, line in found)
