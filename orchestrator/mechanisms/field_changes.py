"""One field of one object changed, and exactly that field put back: the shape code and config faults share.

A subclass says which object an entry changes and what the handle holds (from the object as it stands); the
revert, the restored check and the exported ``kubectl patch`` steps are the same for both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.cluster.fields import Json, Patch, Value, field_patch, read_field
from orchestrator.errors import InjectionError
from orchestrator.mechanisms.activities import Steps, kubectl_patch
from orchestrator.mechanisms.handles import Context, Handle, RevertOutcome, same


class FieldChange(ABC):
    @abstractmethod
    def changed_object(self, entry: Any, namespace: str) -> ObjectRef:
        """The object the entry changes (no side effects)."""

    @abstractmethod
    def handle_from(self, entry: Any, obj: Json, *, fault_id: str, namespace: str) -> Handle:
        """The handle of injecting ``entry`` into ``obj`` as it stands now (no side effects)."""

    @abstractmethod
    def apply(self, handle: Handle, entry: Any, ctx: Context) -> None: ...

    def plan(self, entry: Any, ctx: Context, *, fault_id: str) -> Handle:
        obj = ctx.client.read(self.changed_object(entry, ctx.namespace))
        return self.handle_from(entry, obj, fault_id=fault_id, namespace=ctx.namespace)

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        current = self._current(ctx.client, handle)
        if same(current, handle.pre_value):
            return "already_restored"
        if not same(current, handle.injected_value):
            return "changed_by_agent"
        self.restore(handle, ctx)
        return "reverted"

    def restore(self, handle: Handle, ctx: Context) -> None:
        self.set(handle, ctx, handle.pre_value)

    def set(self, handle: Handle, ctx: Context, value: Value) -> None:
        """Patch the field to ``value``, touching nothing else."""
        ctx.client.patch(handle.ref, self.patch(ctx.client.read(handle.ref), handle, value))

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        """Whether the field holds its pre-injection value again. Side effects: a read of the cluster."""
        try:
            current = self._current(client, handle)
        except InjectionError:
            return False  # the field's container or port is gone: not the pre-injection object
        return same(current, handle.pre_value)

    def steps(self, entry: Any, *, namespace: str, chaos_namespace: str, baseline: Json | None) -> Steps:
        """``kubectl patch`` setting the field to the fault's value, then back (no side effects)."""
        del chaos_namespace
        if baseline is None:
            raise ValueError(f"{entry.id}: a {entry.mechanism} fault needs the baseline object to export")
        handle = self.handle_from(entry, baseline, fault_id=entry.id, namespace=namespace)
        assert handle.field is not None
        slug = handle.field.replace("/", "-")

        def patching(name: str, value: Value) -> Json:
            return kubectl_patch(
                f"{name}-{slug}",
                kind=handle.kind.lower(),
                object_name=handle.name,
                namespace=namespace,
                patch=self.patch(baseline, handle, value),
            )

        return Steps(
            method=[patching("change", handle.injected_value)],
            rollbacks=[patching("restore", handle.pre_value)],
        )

    @staticmethod
    def patch(obj: Json, handle: Handle, value: Value) -> Patch:
        assert handle.field is not None
        return field_patch(obj, field=handle.field, value=value, container=handle.container)

    @staticmethod
    def _current(client: KubeClient, handle: Handle) -> Value:
        assert handle.field is not None
        return read_field(client.read(handle.ref), field=handle.field, container=handle.container)
