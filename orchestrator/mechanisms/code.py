"""The code mechanism: a release moves the Deployment's image to the fault build's tag, with ordinary
release metadata (a change cause), and its revert restores both."""

from __future__ import annotations

from orchestrator.catalog.faults import CodeFault, Mechanism
from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import CHANGE_CAUSE, Json, Value, read_field
from orchestrator.mechanisms.field_changes import FieldChange
from orchestrator.mechanisms.handles import Context, Handle, wait_rolled_out


class CodeMechanism(FieldChange):
    def changed_object(self, entry: CodeFault, namespace: str) -> ObjectRef:
        return ObjectRef("Deployment", namespace, entry.target)

    def handle_from(self, entry: CodeFault, obj: Json, *, fault_id: str, namespace: str) -> Handle:
        image = str(read_field(obj, field="image"))
        repository = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
        return Handle(
            fault_id=fault_id,
            catalog_id=entry.id,
            mechanism=Mechanism.CODE,
            kind="Deployment",
            namespace=namespace,
            name=entry.target,
            field="image",
            pre_value=image,
            injected_value=f"{repository}:{entry.inject.image_tag}",
            pre_annotation=obj["metadata"].get("annotations", {}).get(CHANGE_CAUSE),
        )

    def apply(self, handle: Handle, entry: CodeFault, ctx: Context) -> None:
        self._release(handle, ctx, image=handle.injected_value, cause=entry.inject.change_cause)
        wait_rolled_out(ctx, handle.ref)

    def restore(self, handle: Handle, ctx: Context) -> None:
        self._release(handle, ctx, image=handle.pre_value, cause=handle.pre_annotation)

    def _release(self, handle: Handle, ctx: Context, *, image: Value, cause: str | None) -> None:
        patch = self.patch(ctx.client.read(handle.ref), handle, image)
        patch.body["metadata"] = {"annotations": {CHANGE_CAUSE: cause}}
        ctx.client.patch(handle.ref, patch)
