"""The one exception tree of the orchestrator.

Adapters translate library errors into these with ``raise X(...) from exc``; tools turn them into
structured error results at the edge. Never return error strings.

    OrchestratorError
     ├── InputError                 bad user input: names file, field and value; CLI exit code 2
     │    ├── CatalogError          a fault catalog or topology file is malformed (collects every issue)
     │    ├── ScheduleError         schedule parameters are invalid or cannot be satisfied
     │    └── ConfigError           a run, agent or service configuration is invalid
     ├── InjectionError             a fault could not be injected (recorded, reverted, the run goes on)
     ├── RevertError                a fault could not be reverted after retries (reported loudly)
     ├── PolicyDenied               the policy layer refused a mutation (recorded as a decision)
     ├── ClusterError               the Kubernetes API failed or answered unexpectedly
     │    └── ApiStatusError        the twin's API refused a request (a Kubernetes Status)
     ├── TelemetryError             Prometheus is missing, unhealthy or answered with an error
     │    └── QueryRejected         Prometheus answered a query with an error (bad PromQL, a limit)
     ├── BundleError                a run bundle is unreadable, or fails verification
     └── AgentError                 an agent invocation could not be started
"""

from __future__ import annotations

from dataclasses import dataclass


class OrchestratorError(Exception):
    """Base of every error the orchestrator raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One located defect in an input file: where it is, which field, what value, and what is wrong."""

    file: str
    line: int | None
    field: str
    value: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        field = f" {self.field}" if self.field else ""
        value = f" = {self.value}" if self.value else ""
        if not field and not value:
            return f"{where}: {self.message}"
        return f"{where}:{field}{value}: {self.message}"


class InputError(OrchestratorError):
    """Bad user input. Carries every problem found, not only the first."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        self.message = message
        self.problems: list[Problem] = list(problems or [])
        if len(self.problems) == 1:  # one problem, one line
            super().__init__(f"{message}: {self.problems[0]}")
            return
        lines = [message, *(f"  {p}" for p in self.problems)]
        super().__init__("\n".join(lines))


class CatalogError(InputError):
    """A fault catalog or topology file is malformed."""


class ScheduleError(InputError):
    """Schedule parameters are invalid or cannot be satisfied."""


class ConfigError(InputError):
    """A run, agent or service configuration is invalid."""


class InjectionError(OrchestratorError):
    """A fault could not be injected; it is recorded and reverted, and the run goes on."""


class RevertError(OrchestratorError):
    """A fault could not be reverted after retries; what is left behind is named."""


class PolicyDenied(OrchestratorError):
    """The policy layer refused a mutation."""

    def __init__(self, reason: str, *, forbidden: bool = False) -> None:
        self.reason = reason
        self.forbidden = forbidden
        super().__init__(reason)


class ClusterError(OrchestratorError):
    """The Kubernetes API failed or answered unexpectedly."""


class ApiStatusError(ClusterError):
    """The twin's API server refused a request: the code, reason and causes of the Kubernetes Status."""

    def __init__(
        self, code: int, reason: str, message: str, *, details: dict[str, object] | None = None
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        super().__init__(message)


class TelemetryError(OrchestratorError):
    """Prometheus is missing, unhealthy, or answered with an error."""


class QueryRejected(TelemetryError):
    """Prometheus answered a query with an error status; ``answer`` is what it said (without which server
    said it, so that equal runs on different ports record equal words)."""

    def __init__(self, message: str, *, answer: str) -> None:
        self.answer = answer
        super().__init__(message)


class BundleError(OrchestratorError):
    """A run bundle is unreadable or fails verification."""


class AgentError(OrchestratorError):
    """An agent invocation could not be started."""
