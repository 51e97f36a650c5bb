"""The fault catalog's data model: one entry per fault, the mechanism field selecting its variant.

The catalog is data. The twin reads code-fault builds from it as its image registry; the injectors read the
inject recipes; the schedule reads categories and interference keys; the scorer reads ground truth from the
bundle, which copies it from here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from orchestrator.vocabulary.artifacts import ARTIFACT_GRAMMAR, ARTIFACT_KIND_LIST, ARTIFACT_KINDS, IMAGE_TAG
from orchestrator.vocabulary.chaos import CHAOS_ARTIFACT_KINDS, CHAOS_KIND, ChaosKind, one_of


class Category(StrEnum):
    CODE_BUG = "code-bug"
    DEPENDENCY = "dependency"
    INFRASTRUCTURE = "infrastructure"
    DEPLOYMENT = "deployment"
    CONFIGURATION_BUG = "configuration-bug"
    DATABASE_NETWORK = "database-network"
    AUTHENTICATION = "authentication"


# Share of high-severity production incidents per category (percent); see fault_catalog/README.md.
CATEGORY_WEIGHTS: dict[Category, float] = {
    Category.CODE_BUG: 27.0,
    Category.DEPENDENCY: 16.4,
    Category.INFRASTRUCTURE: 15.8,
    Category.DEPLOYMENT: 13.2,
    Category.CONFIGURATION_BUG: 12.5,
    Category.DATABASE_NETWORK: 10.5,
    Category.AUTHENTICATION: 4.6,
}


class Mechanism(StrEnum):
    CODE = "code"
    CONFIG = "config"
    CHAOS = "chaos"


# Which artifact kinds each mechanism can be responsible for.
KINDS_BY_MECHANISM: dict[Mechanism, frozenset[str]] = {
    Mechanism.CODE: frozenset({"release"}),
    Mechanism.CONFIG: frozenset(
        {"config", "resources", "replicas", "probe", "service", "credentials", "feature-flag", "release"}
    ),
    Mechanism.CHAOS: CHAOS_ARTIFACT_KINDS,
}

_REGISTRY_PREFIX = re.compile(r"^(?:[a-z0-9.-]+(?::[0-9]+)?/)+")


@dataclass(frozen=True, order=True)
class Artifact:
    """A responsible artifact, written ``KIND`` or ``KIND:REFERENCE`` (grammar in fault_catalog/README.md)."""

    kind: str
    reference: str = ""

    @classmethod
    def parse(cls, text: str) -> Artifact:
        kind, _, reference = text.strip().partition(":")
        kind = kind.strip().lower()
        if kind not in ARTIFACT_KINDS:
            raise ValueError(f"unknown artifact kind {kind!r}; expected one of {ARTIFACT_KIND_LIST}")
        return cls(kind=kind, reference=reference.strip())

    def __str__(self) -> str:
        return f"{self.kind}:{self.reference}" if self.reference else self.kind

    def canonical(self) -> re.Match[str]:
        """The reference matched against its kind's grammar; ``ValueError`` names the expected form."""
        grammar = ARTIFACT_GRAMMAR[self.kind]
        match = grammar.pattern.match(self.reference)
        if match is None:
            raise ValueError(f"artifact {str(self)!r} does not follow the form {grammar.form}")
        return match

    def names(self) -> dict[str, str]:
        """What a canonical reference names: workload, service, peer, node, zone, tag or flag."""
        return {key: value for key, value in self.canonical().groupdict().items() if value is not None}

    def normalized(self) -> str:
        """Case, whitespace and an image registry prefix removed: the form Loc-strict compares."""
        reference = re.sub(r"\s+", "", self.reference).lower()
        if self.kind == "release":
            reference = _REGISTRY_PREFIX.sub("", reference)
        return f"{self.kind}:{reference}" if reference else self.kind


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Healthy(_Strict):
    op: Literal["<", "<=", ">", ">=", "=="]
    value: float


class SymptomProbe(_Strict):
    """PromQL whose value is compared with ``healthy``; ``$namespace`` is replaced by the app namespace."""

    query: str = Field(min_length=1)
    healthy: Healthy


class LogMessage(_Strict):
    service: str
    message: str = Field(min_length=8)


class Remedy(_Strict):
    action: Literal[
        "rollback",
        "restart",
        "scale",
        "update_config",
        "update_service",
        "set_feature_flag",
        "submit_patch",
        "uncordon_node",
        "wait",
        "none",
    ]
    service: str | None = None
    field: str | None = None
    value: str | int | None = None


class BuildBehaviour(_Strict):
    """What a fault build does when it runs: the twin derives every symptom of a code fault from this."""

    error_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    ops: tuple[str, ...] = ()
    extra_latency_ms: float = Field(default=0.0, ge=0.0)
    crash_on_start: bool = False
    memory_leak_mib_per_min: float = Field(default=0.0, ge=0.0)
    cpu_factor: float = Field(default=1.0, gt=0.0)

    @model_validator(mode="after")
    def _does_something(self) -> BuildBehaviour:
        inert = (
            self.error_ratio == 0.0
            and self.extra_latency_ms == 0.0
            and not self.crash_on_start
            and self.memory_leak_mib_per_min == 0.0
            and self.cpu_factor == 1.0
        )
        if inert:
            raise ValueError("a fault build must change behaviour (errors, latency, crash, leak or cpu)")
        return self


class SourceChange(_Strict):
    """The defect as a source change: repair means a patch that restores ``before``."""

    file: str
    before: str = Field(min_length=1)
    after: str = Field(min_length=1)


class CodeInject(_Strict):
    image_tag: str = Field(pattern=rf"^{IMAGE_TAG}$")
    change_cause: str = Field(min_length=8)
    release_note: str = Field(min_length=8)
    behaviour: BuildBehaviour
    source: SourceChange


CONFIG_FIELD = (
    r"^(env/[A-Za-z_][A-Za-z0-9_]*|resources/(requests|limits)/(cpu|memory)|replicas"
    r"|probe/(readiness|liveness)/(port|path)|port/[a-z0-9-]+|image|args|targetPort|flags/[A-Za-z0-9_-]+)$"
)


# The config objects that hold a pod template, by the workload kind that runs the pods.
WORKLOAD_OBJECTS = {"deployment": "Deployment", "statefulset": "StatefulSet"}


class ConfigInject(_Strict):
    """A targeted change of exactly one field of one object.

    ``field`` paths: ``env/NAME``, ``resources/limits/memory`` (requests|limits, cpu|memory), ``replicas``,
    ``probe/readiness/port`` (readiness|liveness, port|path), ``port/NAME`` (container port),
    ``image`` (an image that no registry holds), ``args`` (the container's arguments, written as one string
    of words separated by spaces), ``targetPort`` (Service), ``flags/NAME`` (feature flag ConfigMap).
    ``value: null`` clears the field. A pod template's fields belong to the target's workload, ``deployment``
    or ``statefulset`` as the topology runs it.
    """

    object: Literal["deployment", "statefulset", "service", "configmap"] = "deployment"
    name: str | None = None
    container: str | None = None
    field: str = Field(pattern=CONFIG_FIELD)
    value: str | int | None

    @model_validator(mode="after")
    def _field_fits_object(self) -> ConfigInject:
        # A Service carries only targetPort, a flag ConfigMap only flags; a workload carries the rest.
        owner = (
            "service"
            if self.field == "targetPort"
            else "configmap"
            if self.field.startswith("flags/")
            else None
        )
        if owner is None and self.object not in WORKLOAD_OBJECTS:
            raise ValueError(
                f"field {self.field!r} belongs to a deployment or a statefulset, not a {self.object}"
            )
        if owner is not None and owner != self.object:
            raise ValueError(f"field {self.field!r} belongs to a {owner}, not a {self.object}")
        return self


class ChaosInject(_Strict):
    """A Chaos Mesh object (``spec`` without the selector, built from the target) or a pod/node action."""

    kind: str
    spec: dict[str, Any] = {}

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in CHAOS_KIND:
            raise ValueError(f"Input should be {one_of(tuple(CHAOS_KIND))}")
        return value

    @model_validator(mode="after")
    def _spec_fits_kind(self) -> ChaosInject:
        problem = self.chaos_kind.spec_problem(self.spec)
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def chaos_kind(self) -> ChaosKind:
        return CHAOS_KIND[self.kind]


class _Entry(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{2,80}$")
    app: str
    category: Category
    target: str
    culprits: tuple[str, ...] = Field(min_length=1)
    artifact: str
    description: str = Field(min_length=8)
    log: LogMessage
    probe: SymptomProbe
    remedy: Remedy

    @field_validator("artifact")
    @classmethod
    def _artifact_parses(cls, value: str) -> str:
        artifact = Artifact.parse(value)
        artifact.canonical()
        return str(artifact)

    @property
    def responsible(self) -> Artifact:
        return Artifact.parse(self.artifact)

    @property
    def heals_by_itself(self) -> bool:
        """Whether the fault ends without any revert (a killed pod comes back): only chaos can."""
        return False

    def content_hash(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def _check_kind(self, mechanism: Mechanism) -> None:
        if self.responsible.kind not in KINDS_BY_MECHANISM[mechanism]:
            allowed = ", ".join(sorted(KINDS_BY_MECHANISM[mechanism]))
            kind = self.responsible.kind
            raise ValueError(f"artifact kind {kind!r} does not fit a {mechanism} fault ({allowed})")


class CodeFault(_Entry):
    mechanism: Literal[Mechanism.CODE]
    intended_update: str = Field(min_length=8)
    defect: str = Field(min_length=8)
    inject: CodeInject
    revert: Literal["restore-image"] = "restore-image"

    @model_validator(mode="after")
    def _consistent(self) -> CodeFault:
        self._check_kind(Mechanism.CODE)
        return self

    def slot(self) -> str:
        return f"{self.target}/image"


class ConfigFault(_Entry):
    mechanism: Literal[Mechanism.CONFIG]
    intended_update: str = Field(min_length=8)
    defect: str = Field(min_length=8)
    inject: ConfigInject
    revert: Literal["restore-value"] = "restore-value"

    @model_validator(mode="after")
    def _consistent(self) -> ConfigFault:
        self._check_kind(Mechanism.CONFIG)
        return self

    def slot(self) -> str:
        if self.inject.field == "image":
            # A new image is a release: it must not compose with a code fault's release of the same workload.
            return f"{self.inject.name or self.target}/image"
        return f"{self.inject.object}/{self.inject.name or self.target}/{self.inject.field}"


class ChaosFault(_Entry):
    mechanism: Literal[Mechanism.CHAOS]
    inject: ChaosInject
    revert: Literal["delete-object", "await-recovery", "uncordon-node"] = "delete-object"

    @model_validator(mode="after")
    def _consistent(self) -> ChaosFault:
        self._check_kind(Mechanism.CHAOS)
        return self

    def slot(self) -> str:
        if self.responsible.kind == "node":
            # Drains share the nodes' cordons: a node's drain and its zone's would revert each other's.
            return "nodes/cordon"
        return f"{self.target}/chaos/{self.inject.kind}"

    @property
    def heals_by_itself(self) -> bool:
        return self.revert == "await-recovery"


# A catalog entry: the variant its ``mechanism`` selects.
Entry = CodeFault | ConfigFault | ChaosFault
FaultEntry = Annotated[Entry, Field(discriminator="mechanism")]
FAULT_ENTRY: TypeAdapter[Entry] = TypeAdapter(FaultEntry)


def interference_keys(entry: Entry) -> frozenset[str]:
    """Keys two active faults must not share: the responsible artifact and the (target, mechanism) slot.

    No side effects. A config fault on an env var and a code fault on the same Deployment have different
    keys and compose; two releases of one Deployment, or two faults on one artifact, interfere.
    """
    return frozenset({f"artifact:{entry.responsible.normalized()}", f"slot:{entry.slot()}"})
