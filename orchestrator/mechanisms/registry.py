"""The mechanism registry: the catalog's ``mechanism`` field, or a handle's, picks the object that acts."""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.catalog.faults import Entry, Mechanism
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.cluster.fields import Json
from orchestrator.mechanisms.activities import Steps
from orchestrator.mechanisms.chaos import ChaosMechanism
from orchestrator.mechanisms.code import CodeMechanism
from orchestrator.mechanisms.config import ConfigMechanism
from orchestrator.mechanisms.handles import Context, Handle, RevertOutcome


class FaultMechanism(Protocol):
    """What every mechanism does; ``entry`` is the catalog variant of that mechanism."""

    def changed_object(self, entry: Any, namespace: str) -> ObjectRef | None:
        """The deployed object a fault of this mechanism changes, or None (no side effects)."""
        ...

    def plan(self, entry: Any, ctx: Context, *, fault_id: str) -> Handle:
        """Read the pre-injection state and return the handle to journal; changes nothing."""
        ...

    def apply(self, handle: Handle, entry: Any, ctx: Context) -> None: ...

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome: ...

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        """Whether the fault's responsible artifact is back as before the injection; None when there is
        nothing to compare (killed pods come back by themselves). Side effects: reads of the cluster."""
        ...

    def steps(self, entry: Any, *, namespace: str, chaos_namespace: str, baseline: Json | None) -> Steps:
        """The Chaos Toolkit activities that inject and take out ``entry`` (no side effects); ``baseline``
        is the object a code or config fault changes, as the app's manifests deploy it."""
        ...


MECHANISMS: dict[Mechanism, FaultMechanism] = {
    Mechanism.CODE: CodeMechanism(),
    Mechanism.CONFIG: ConfigMechanism(),
    Mechanism.CHAOS: ChaosMechanism(),
}


def mechanism_of(entry: Entry) -> FaultMechanism:
    return MECHANISMS[Mechanism(entry.mechanism)]


def artifact_restored(client: KubeClient, handle: Handle) -> bool | None:
    """Whether the artifact of an injected fault is restored, as its mechanism judges it."""
    return MECHANISMS[handle.mechanism].restored(client, handle)
