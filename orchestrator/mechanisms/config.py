"""The config mechanism: exactly one field of one object (a Deployment or StatefulSet, a Service or a flag
ConfigMap) set to the entry's value; its revert touches only that field."""

from __future__ import annotations

from orchestrator.catalog.faults import WORKLOAD_OBJECTS, ConfigFault, Mechanism
from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import Json, read_field
from orchestrator.errors import InjectionError
from orchestrator.mechanisms.field_changes import FieldChange
from orchestrator.mechanisms.handles import (
    Context,
    Handle,
    RevertOutcome,
    release_stuck_pods,
    same,
    wait_rolled_out,
)

_KINDS = {**WORKLOAD_OBJECTS, "service": "Service", "configmap": "ConfigMap"}


class ConfigMechanism(FieldChange):
    def changed_object(self, entry: ConfigFault, namespace: str) -> ObjectRef:
        return ObjectRef(_KINDS[entry.inject.object], namespace, entry.inject.name or entry.target)

    def handle_from(self, entry: ConfigFault, obj: Json, *, fault_id: str, namespace: str) -> Handle:
        inject = entry.inject
        ref = self.changed_object(entry, namespace)
        return Handle(
            fault_id=fault_id,
            catalog_id=entry.id,
            mechanism=Mechanism.CONFIG,
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            field=inject.field,
            container=inject.container,
            pre_value=read_field(obj, field=inject.field, container=inject.container),
            injected_value=inject.value,
        )

    def plan(self, entry: ConfigFault, ctx: Context, *, fault_id: str) -> Handle:
        handle = super().plan(entry, ctx, fault_id=fault_id)
        if same(handle.pre_value, handle.injected_value):
            shown = f"{handle.field} = {handle.pre_value!r}"
            raise InjectionError(f"{handle.ref} already has {shown}; the fault would change nothing")
        return handle

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        outcome = super().revert(handle, ctx)
        if handle.kind == "StatefulSet" and outcome != "changed_by_agent":
            release_stuck_pods(ctx, handle.ref)  # a pod the fault left unready holds the set's rollout
        return outcome

    def apply(self, handle: Handle, entry: ConfigFault, ctx: Context) -> None:
        self.set(handle, ctx, handle.injected_value)
        if handle.kind in WORKLOAD_OBJECTS.values() and handle.field != "replicas":
            wait_rolled_out(ctx, handle.ref)
