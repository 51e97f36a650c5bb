"""The argument models of the agent tools: what each tool accepts, validated before the policy sees it.

Every model forbids unknown fields, so a misspelt argument is an error the agent can read, never a silent
default. Every string, list and mapping the agent writes has a length bound (a diff the largest), and no
number may be NaN or infinite. Times are schedule seconds (the clock of alert times); durations are seconds.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.catalog.faults import Artifact
from orchestrator.interface.patterns import PatternError, compile_pattern

_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
Name = Annotated[str, Field(min_length=1, max_length=253, pattern=_NAME)]
Kind = Literal[
    "pods", "deployments", "statefulsets", "replicasets", "services", "endpoints", "configmaps", "secrets",
    "nodes", "namespaces",
]  # fmt: skip
PortName = Annotated[str, Field(max_length=15, pattern=r"^[a-z0-9-]{1,15}$")]
PortNumber = Annotated[int, Field(ge=1, le=65535)]
Quantity = Annotated[str, Field(max_length=32, pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")]
EnvName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EnvValue = Annotated[str, Field(max_length=4096)]
Label = Annotated[str, Field(max_length=253)]
SelectorKey = Annotated[
    str, Field(min_length=1, max_length=253, pattern=r"^([a-z0-9.-]+/)?[A-Za-z0-9_.-]{1,63}$")
]
SelectorValue = Annotated[str, Field(max_length=63, pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")]
Seconds = Annotated[float, Field(allow_inf_nan=False)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReadArgs(Args):
    namespace: Name | None = Field(default=None, description="defaults to the application's namespace")


class GetAlerts(ReadArgs):
    status: Literal["firing", "resolved", "all"] = "all"
    service: Label | None = None
    rule: Label | None = None
    since_s: Seconds | None = Field(default=None, ge=0, description="only alerts active in the last since_s")


class QueryMetrics(ReadArgs):
    query: str = Field(min_length=1, max_length=4000)
    start_s: Seconds | None = Field(default=None, description="schedule seconds; with end_s: a range query")
    end_s: Seconds | None = None
    step_s: Seconds = Field(default=30.0, ge=1.0, le=3600.0)


class GetLogs(ReadArgs):
    service: Name | None = None
    pod: Name | None = None
    since_s: int = Field(default=300, ge=1, le=86_400)
    grep: str | None = Field(
        default=None,
        max_length=200,
        description="a regular expression in RE2 syntax, case-insensitive (no backreferences or lookaround)",
    )
    tail: int = Field(default=200, ge=1, le=2000)
    previous: bool = False

    @field_validator("grep")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compile_pattern(value, ignore_case=True)
            except PatternError as exc:
                raise ValueError(f"grep: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _one_source(self) -> GetLogs:
        if (self.service is None) == (self.pod is None):
            raise ValueError("name exactly one of service or pod")
        return self


class GetTraces(ReadArgs):
    service: Name
    since_s: int = Field(default=300, ge=1, le=86_400)
    errors_only: bool = False
    limit: int = Field(default=20, ge=1, le=100)


class GetTopology(Args):
    pass


class GetResources(ReadArgs):
    kind: Kind
    name: Name | None = None


class Describe(ReadArgs):
    kind: Kind
    name: Name


class GetEvents(ReadArgs):
    name: Label | None = Field(default=None, description="only events of objects whose name starts with this")
    since_s: int = Field(default=600, ge=1, le=86_400)


class ServiceArgs(ReadArgs):
    service: Name


class GetRolloutHistory(ServiceArgs):
    pass


class GetConfig(ServiceArgs):
    pass


class ListSource(ServiceArgs):
    pass


class ReadSource(ServiceArgs):
    path: str = Field(min_length=1, max_length=400)


class GetFeatureFlags(ReadArgs):
    pass


class IncidentReportArgs(Args):
    incident_id: str = Field(min_length=1, max_length=120)
    alert_ids: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=200)
    culprit_services: list[Name] = Field(default_factory=list, max_length=50)
    artifact: str = Field(
        max_length=400, description="KIND or KIND:REFERENCE, e.g. release:cartservice@v1.2 or config"
    )
    status: Literal["open", "mitigated", "resolved"] = "open"
    notes: str = Field(default="", max_length=4000)

    @field_validator("artifact")
    @classmethod
    def _artifact_parses(cls, value: str) -> str:
        return str(Artifact.parse(value))


class MutateArgs(Args):
    incident_id: str = Field(min_length=1, max_length=120)


class ServiceMutation(MutateArgs):
    service: Name


class RestartService(ServiceMutation):
    pass


class ScaleService(ServiceMutation):
    replicas: int


class RollbackService(ServiceMutation):
    to_revision: int | None = Field(default=None, ge=1)


class ResourceQuantities(Args):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class ResourceChange(Args):
    limits: ResourceQuantities | None = None
    requests: ResourceQuantities | None = None


class UpdateConfig(ServiceMutation):
    env: dict[EnvName, EnvValue | None] | None = Field(default=None, max_length=100)
    resources: ResourceChange | None = None
    ports: dict[PortName, PortNumber] | None = Field(default=None, max_length=50)


class UpdateService(ServiceMutation):
    """A change of the Kubernetes Service in front of a workload: one port's numbers, or the selector."""

    port_name: PortName | None = Field(default=None, description="which port; needed when it has several")
    target_port: PortNumber | PortName | None = Field(
        default=None, description="the pods' port it forwards to"
    )
    port: PortNumber | None = Field(default=None, description="the port the Service listens on")
    selector: dict[SelectorKey, SelectorValue] | None = Field(default=None, min_length=1, max_length=20)


class UncordonNode(MutateArgs):
    node: Name
    services: list[Name] = Field(
        default_factory=list, max_length=50, description="the workloads the cordon displaced"
    )


class SetFeatureFlag(MutateArgs):
    flag: str = Field(min_length=1, max_length=120)
    variant: str = Field(min_length=1, max_length=120)


class DeleteResource(MutateArgs):
    kind: Literal["pod", "deployment", "namespace", "service", "configmap", "secret", "replicaset", "node"]
    name: Name
    namespace: Name | None = None


class ProposePatch(ServiceMutation):
    path: str = Field(min_length=1, max_length=400)
    diff: str = Field(min_length=1, max_length=100_000, description="a unified diff of the file")


class BuildServiceImage(ServiceMutation):
    patch_id: str = Field(min_length=1, max_length=120)


class SubmitPatch(ServiceMutation):
    image: str = Field(min_length=1, max_length=400)


def is_read(call: Args) -> bool:
    """Whether ``call`` only reads: neither a change nor an incident report (no side effects)."""
    return not isinstance(call, MutateArgs | IncidentReportArgs)
