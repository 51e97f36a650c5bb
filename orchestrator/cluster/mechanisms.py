"""Fault mechanisms: how a catalog entry is put into a cluster and taken out again, exactly.

Each mechanism plans a ``Handle`` (reading the pre-injection state, changing nothing), applies it, and
reverts it. The handle is written to the revert ledger before anything is applied, so a crash at any point
leaves enough on disk to undo the fault. A registry keyed on the entry's mechanism picks the injector.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from orchestrator.catalog.faults import ChaosFault, CodeFault, ConfigFault, Mechanism
from orchestrator.cluster import chaos
from orchestrator.cluster.client import KubeClient, NotFound, ObjectRef
from orchestrator.cluster.fields import Value, field_patch, read_field
from orchestrator.errors import InjectionError

Entry = CodeFault | ConfigFault | ChaosFault
CHANGE_CAUSE = "kubernetes.io/change-cause"


class Handle(BaseModel):
    """Everything needed to revert one injected fault, serialisable into the revert ledger."""

    model_config = ConfigDict(frozen=True)

    fault_id: str
    entry_id: str
    mechanism: Mechanism
    kind: str
    namespace: str
    name: str
    field: str | None = None
    container: str | None = None
    pre_value: Value = None
    injected_value: Value = None
    pre_annotation: str | None = None
    affected: tuple[str, ...] = ()

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.namespace, self.name)


RevertOutcome = Literal["reverted", "already_restored", "changed_by_agent"]


@dataclass
class Context:
    """What a mechanism needs: the cluster, where the app and the chaos objects live, and a way to wait.

    ``settle`` lets the world move one tick (a stepped twin advances a few simulated seconds; a real cluster
    sleeps), so waiting for a rollout works the same on both.
    """

    client: KubeClient
    namespace: str
    chaos_namespace: str
    settle: Callable[[], None]
    settle_limit: int = 24


class Injector(Protocol):
    def plan(self, entry: Any, ctx: Context, *, fault_id: str) -> Handle: ...
    def apply(self, handle: Handle, entry: Any, ctx: Context) -> None: ...
    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome: ...


def _same(left: Value, right: Value) -> bool:
    return (None if left is None else str(left)) == (None if right is None else str(right))


def artifact_restored(client: KubeClient, handle: Handle) -> bool | None:
    """Whether the fault's responsible artifact is back as before the injection: the pre-injection image or
    setting, no chaos object, an uncordoned node; None when there is nothing to compare (killed pods come
    back by themselves). Side effects: reads of the cluster."""
    if handle.field is not None:
        obj = client.read(handle.ref)
        try:
            current = read_field(obj, field=handle.field, container=handle.container)
        except InjectionError:
            return False  # the field's container or port is gone: not the pre-injection object
        return _same(current, handle.pre_value)
    if handle.kind in chaos.CRD_KINDS:
        try:
            client.get_chaos(namespace=handle.namespace, plural=chaos.plural(handle.kind), name=handle.name)
        except NotFound:
            return True
        return False
    if handle.kind == "drain-node":
        node = client.read(ObjectRef("Node", "", handle.name))
        return not node.get("spec", {}).get("unschedulable", False)
    return None


def wait_rolled_out(ctx: Context, name: str) -> bool:
    """Settle until the Deployment runs its current template somewhere; bounded by ``settle_limit``."""
    for _ in range(ctx.settle_limit):
        deployment = ctx.client.read(ObjectRef("Deployment", ctx.namespace, name))
        status = deployment.get("status", {})
        generation = deployment["metadata"].get("generation", 0)
        if status.get("observedGeneration", 0) >= generation and status.get("updatedReplicas", 0) >= 1:
            return True
        ctx.settle()
    return False


class CodeInjector:
    """A release: the Deployment's image moves to the fault build's tag, with ordinary release metadata."""

    def plan(self, entry: CodeFault, ctx: Context, *, fault_id: str) -> Handle:
        deployment = ctx.client.read(ObjectRef("Deployment", ctx.namespace, entry.target))
        image = str(read_field(deployment, field="image"))
        repository = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
        annotation = deployment["metadata"].get("annotations", {}).get(CHANGE_CAUSE)
        return Handle(
            fault_id=fault_id,
            entry_id=entry.id,
            mechanism=Mechanism.CODE,
            kind="Deployment",
            namespace=ctx.namespace,
            name=entry.target,
            field="image",
            pre_value=image,
            injected_value=f"{repository}:{entry.inject.image_tag}",
            pre_annotation=annotation,
        )

    def apply(self, handle: Handle, entry: CodeFault, ctx: Context) -> None:
        self._set(handle, ctx, image=handle.injected_value, cause=entry.inject.change_cause)
        wait_rolled_out(ctx, handle.name)

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        current = read_field(ctx.client.read(handle.ref), field="image")
        if _same(current, handle.pre_value):
            return "already_restored"
        if not _same(current, handle.injected_value):
            return "changed_by_agent"
        self._set(handle, ctx, image=handle.pre_value, cause=handle.pre_annotation)
        return "reverted"

    @staticmethod
    def _set(handle: Handle, ctx: Context, *, image: Value, cause: str | None) -> None:
        deployment = ctx.client.read(handle.ref)
        patch = field_patch(deployment, field="image", value=image)
        patch.body["metadata"] = {"annotations": {CHANGE_CAUSE: cause}}
        ctx.client.patch(handle.ref, patch)


class ConfigInjector:
    """A changed setting: exactly one field of one object; its revert touches only that field."""

    _KINDS = {"deployment": "Deployment", "service": "Service", "configmap": "ConfigMap"}

    def plan(self, entry: ConfigFault, ctx: Context, *, fault_id: str) -> Handle:
        inject = entry.inject
        ref = ObjectRef(self._KINDS[inject.object], ctx.namespace, inject.name or entry.target)
        pre = read_field(ctx.client.read(ref), field=inject.field, container=inject.container)
        if _same(pre, inject.value):
            raise InjectionError(
                f"{ref} already has {inject.field} = {pre!r}; the fault would change nothing"
            )
        return Handle(
            fault_id=fault_id,
            entry_id=entry.id,
            mechanism=Mechanism.CONFIG,
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            field=inject.field,
            container=inject.container,
            pre_value=pre,
            injected_value=inject.value,
        )

    def apply(self, handle: Handle, entry: ConfigFault, ctx: Context) -> None:
        self._set(handle, ctx, handle.injected_value)
        if handle.kind == "Deployment" and handle.field != "replicas":
            wait_rolled_out(ctx, handle.name)

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        assert handle.field is not None
        current = read_field(ctx.client.read(handle.ref), field=handle.field, container=handle.container)
        if _same(current, handle.pre_value):
            return "already_restored"
        if not _same(current, handle.injected_value):
            return "changed_by_agent"
        self._set(handle, ctx, handle.pre_value)
        return "reverted"

    @staticmethod
    def _set(handle: Handle, ctx: Context, value: Value) -> None:
        assert handle.field is not None
        obj = ctx.client.read(handle.ref)
        ctx.client.patch(
            handle.ref, field_patch(obj, field=handle.field, value=value, container=handle.container)
        )


class ChaosInjector:
    """Chaos Mesh objects in the chaos namespace, and pod and node actions, through Chaos Toolkit."""

    def plan(self, entry: ChaosFault, ctx: Context, *, fault_id: str) -> Handle:
        kind = entry.inject.kind
        if kind in chaos.CRD_KINDS:
            return Handle(
                fault_id=fault_id,
                entry_id=entry.id,
                mechanism=Mechanism.CHAOS,
                kind=kind,
                namespace=ctx.chaos_namespace,
                name=f"{kind.lower()}-{fault_id}",
            )
        node = str(entry.inject.spec.get("node") or self._node_of(entry.target, ctx))
        return Handle(
            fault_id=fault_id,
            entry_id=entry.id,
            mechanism=Mechanism.CHAOS,
            kind=kind,
            namespace=ctx.namespace,
            name=entry.target if kind == "terminate-pods" else node,
        )

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context) -> None:
        kubeconfig = ctx.client.kubeconfig
        if kubeconfig is None:
            raise InjectionError("chaos actions need the cluster's kubeconfig")
        if handle.kind in chaos.CRD_KINDS:
            ctx.client.ensure_namespace(ctx.chaos_namespace)
            body = chaos.chaos_object(
                inject=entry.inject,
                name=handle.name,
                chaos_namespace=ctx.chaos_namespace,
                app_namespace=ctx.namespace,
                target=entry.target,
            )
            chaos.run_action(
                kubeconfig=kubeconfig,
                module="chaosk8s.crd.actions",
                func="create_custom_object",
                arguments={
                    "group": "chaos-mesh.org",
                    "version": "v1alpha1",
                    "plural": chaos.plural(handle.kind),
                    "ns": ctx.chaos_namespace,
                    "resource": body,
                },
            )
        elif handle.kind == "terminate-pods":
            chaos.run_action(
                kubeconfig=kubeconfig,
                module="chaosk8s.pod.actions",
                func="terminate_pods",
                arguments={
                    "label_selector": f"app={entry.target}",
                    "ns": ctx.namespace,
                    "all": True,
                    "grace_period": 0,
                },
            )
        else:  # drain-node: no new pods there, and the app's pods on it go
            chaos.run_action(
                kubeconfig=kubeconfig,
                module="chaosk8s.node.actions",
                func="cordon_node",
                arguments={"name": handle.name},
            )
            for pod in ctx.client.list_pods(ctx.namespace, selector=""):
                if pod.get("spec", {}).get("nodeName") == handle.name:
                    ctx.client.core.delete_namespaced_pod(pod["metadata"]["name"], ctx.namespace)

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        kubeconfig = ctx.client.kubeconfig
        if kubeconfig is None:
            raise InjectionError("chaos actions need the cluster's kubeconfig")
        if handle.kind in chaos.CRD_KINDS:
            try:
                ctx.client.get_chaos(
                    namespace=handle.namespace, plural=chaos.plural(handle.kind), name=handle.name
                )
            except NotFound:
                return "already_restored"
            chaos.run_action(
                kubeconfig=kubeconfig,
                module="chaosk8s.crd.actions",
                func="delete_custom_object",
                arguments={
                    "group": "chaos-mesh.org",
                    "version": "v1alpha1",
                    "plural": chaos.plural(handle.kind),
                    "name": handle.name,
                    "ns": handle.namespace,
                },
            )
            return "reverted"
        if handle.kind == "drain-node":
            chaos.run_action(
                kubeconfig=kubeconfig,
                module="chaosk8s.node.actions",
                func="uncordon_node",
                arguments={"name": handle.name},
            )
            return "reverted"
        return "already_restored"  # killed pods come back by themselves; nothing is left in the cluster

    @staticmethod
    def _node_of(target: str, ctx: Context) -> str:
        pods = ctx.client.list_pods(ctx.namespace, selector=f"app={target}")
        for pod in pods:
            node = pod.get("spec", {}).get("nodeName")
            if node:
                return str(node)
        raise InjectionError(f"no pod of {target!r} is placed on a node to drain")


INJECTORS: dict[Mechanism, Injector] = {
    Mechanism.CODE: CodeInjector(),
    Mechanism.CONFIG: ConfigInjector(),
    Mechanism.CHAOS: ChaosInjector(),
}


def injector_for(entry: Entry) -> Injector:
    return INJECTORS[Mechanism(entry.mechanism)]
