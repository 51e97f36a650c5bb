"""The chaos mechanism: a Chaos Mesh object in the chaos namespace, or an action on the target's pods, its
node or its whole zone (a site outage), carried out as Chaos Toolkit activities (``chaosk8s``).

Each form describes its activities once: the injector runs them and ``marathon catalog export-ctk`` writes
them out. Which form a kind takes is the vocabulary's ``crd`` column; an action kind has its own form here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from orchestrator.catalog.faults import ChaosFault, ChaosInject, Mechanism
from orchestrator.catalog.manifests import ZONE_LABEL
from orchestrator.cluster.client import KubeClient, NotFound, ObjectRef
from orchestrator.cluster.executing import run_activity
from orchestrator.cluster.fields import Json
from orchestrator.errors import InjectionError
from orchestrator.mechanisms.activities import Steps, python_action
from orchestrator.mechanisms.handles import Context, Handle, RevertOutcome
from orchestrator.vocabulary.chaos import CHAOS_API_VERSION, CHAOS_GROUP, CHAOS_KIND, CHAOS_VERSION


def chaos_object(
    *, inject: ChaosInject, name: str, chaos_namespace: str, app_namespace: str, target: str
) -> Json:
    """The Chaos Mesh object for an entry: its spec with selectors built from the target (no side effects).

    A ``target: {service: NAME}`` in the spec (network faults between two services) becomes a Chaos Mesh
    target selector on that service's pods; a ``target`` written as a Chaos Mesh selector is kept.
    """
    spec: Json = {key: value for key, value in inject.spec.items() if key != "target"}
    spec.setdefault("mode", "all")
    spec["selector"] = {"namespaces": [app_namespace], "labelSelectors": {"app": target}}
    other = inject.spec.get("target")
    if isinstance(other, dict) and "service" in other:
        spec["target"] = {
            "mode": "all",
            "selector": {"namespaces": [app_namespace], "labelSelectors": {"app": other["service"]}},
        }
        spec.setdefault("direction", "to")
    elif isinstance(other, dict) and isinstance(other.get("selector"), dict):
        # A peer written as a Chaos Mesh selector (the catalog's documented form) keeps its selector,
        # confined to the app's namespace when it names none.
        peer = {key: value for key, value in other.items() if key != "selector"}
        peer.setdefault("mode", "all")
        peer["selector"] = {"namespaces": [app_namespace], **other["selector"]}
        spec["target"] = peer
        spec.setdefault("direction", "to")
    elif other is not None:
        spec["target"] = other  # HTTPChaos: which side of the exchange, Request or Response
    return {
        "apiVersion": CHAOS_API_VERSION,
        "kind": inject.kind,
        "metadata": {"name": name, "namespace": chaos_namespace},
        "spec": spec,
    }


class _Form(Protocol):
    """How one form of chaos is named in the ledger, what its activities are, and how it is checked."""

    def handle(
        self, entry: ChaosFault, *, fault_id: str, namespace: str, chaos_namespace: str, place: str
    ) -> Handle:
        """The handle of the fault (no side effects); ``place`` is what an action acts on: the node (or, for
        a zone's drain, the zone) the target runs in."""
        ...

    def method(self, handle: Handle, entry: ChaosFault, *, namespace: str) -> list[Json]: ...
    def rollbacks(self, handle: Handle) -> list[Json]: ...
    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context, *, kubeconfig: Path) -> None: ...
    def revert(self, handle: Handle, ctx: Context, *, kubeconfig: Path) -> RevertOutcome: ...
    def restored(self, client: KubeClient, handle: Handle) -> bool | None: ...


def _run(activities: list[Json], *, kubeconfig: Path) -> None:
    for activity in activities:
        run_activity(activity, kubeconfig=kubeconfig)


class ChaosMeshObject:
    """Any Chaos Mesh kind: the object is created in the chaos namespace and deleted to revert."""

    def handle(
        self, entry: ChaosFault, *, fault_id: str, namespace: str, chaos_namespace: str, place: str
    ) -> Handle:
        kind = entry.inject.chaos_kind
        return Handle(
            fault_id=fault_id,
            catalog_id=entry.id,
            mechanism=Mechanism.CHAOS,
            kind=kind.name,
            namespace=chaos_namespace,
            name=f"{kind.plural}-{fault_id}",
        )

    def method(self, handle: Handle, entry: ChaosFault, *, namespace: str) -> list[Json]:
        body = chaos_object(
            inject=entry.inject,
            name=handle.name,
            chaos_namespace=handle.namespace,
            app_namespace=namespace,
            target=entry.target,
        )
        plural = CHAOS_KIND[handle.kind].plural
        create = "create_custom_object"
        return [python_action(f"create-{plural}", _CRD_ACTIONS, create, {**_where(handle), "resource": body})]

    def rollbacks(self, handle: Handle) -> list[Json]:
        plural = CHAOS_KIND[handle.kind].plural
        delete = "delete_custom_object"
        return [
            python_action(f"delete-{plural}", _CRD_ACTIONS, delete, {**_where(handle), "name": handle.name})
        ]

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context, *, kubeconfig: Path) -> None:
        ctx.client.ensure_namespace(ctx.chaos_namespace)
        _run(self.method(handle, entry, namespace=ctx.namespace), kubeconfig=kubeconfig)

    def revert(self, handle: Handle, ctx: Context, *, kubeconfig: Path) -> RevertOutcome:
        if self.restored(ctx.client, handle):
            return "already_restored"
        _run(self.rollbacks(handle), kubeconfig=kubeconfig)
        return "reverted"

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        """Restored once the object is gone. Side effects: a read of the cluster."""
        try:
            client.get_chaos(
                namespace=handle.namespace, plural=CHAOS_KIND[handle.kind].plural, name=handle.name
            )
        except NotFound:
            return True
        return False


_CRD_ACTIONS = "chaosk8s.crd.actions"


def _where(handle: Handle) -> Json:
    plural = CHAOS_KIND[handle.kind].plural
    return {"group": CHAOS_GROUP, "version": CHAOS_VERSION, "plural": plural, "ns": handle.namespace}


def _direct_handle(entry: ChaosFault, *, fault_id: str, namespace: str, name: str) -> Handle:
    """The handle of a chaos action carried out directly (no chaos object): what it acted on."""
    return Handle(
        fault_id=fault_id,
        catalog_id=entry.id,
        mechanism=Mechanism.CHAOS,
        kind=entry.inject.kind,
        namespace=namespace,
        name=name,
    )


class TerminatePods:
    """Every pod of the target is deleted at once; its controller brings them back, so nothing is reverted."""

    def handle(
        self, entry: ChaosFault, *, fault_id: str, namespace: str, chaos_namespace: str, place: str
    ) -> Handle:
        return _direct_handle(entry, fault_id=fault_id, namespace=namespace, name=entry.target)

    def method(self, handle: Handle, entry: ChaosFault, *, namespace: str) -> list[Json]:
        arguments = {
            "label_selector": f"app={handle.name}",
            "ns": handle.namespace,
            "all": True,
            "grace_period": 0,
        }
        return [python_action("terminate-pods", "chaosk8s.pod.actions", "terminate_pods", arguments)]

    def rollbacks(self, handle: Handle) -> list[Json]:
        return []

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context, *, kubeconfig: Path) -> None:
        _run(self.method(handle, entry, namespace=ctx.namespace), kubeconfig=kubeconfig)

    def revert(self, handle: Handle, ctx: Context, *, kubeconfig: Path) -> RevertOutcome:
        return "already_restored"  # killed pods come back by themselves; nothing is left in the cluster

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        return None  # nothing to compare: the pods are new ones


class DrainNode:
    """The target's node is cordoned and the app's pods on it deleted; the revert uncordons it."""

    def handle(
        self, entry: ChaosFault, *, fault_id: str, namespace: str, chaos_namespace: str, place: str
    ) -> Handle:
        return _direct_handle(entry, fault_id=fault_id, namespace=namespace, name=place)

    def method(self, handle: Handle, entry: ChaosFault, *, namespace: str) -> list[Json]:
        return [python_action("cordon-node", "chaosk8s.node.actions", "cordon_node", self._node(handle))]

    def rollbacks(self, handle: Handle) -> list[Json]:
        return [python_action("uncordon-node", "chaosk8s.node.actions", "uncordon_node", self._node(handle))]

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context, *, kubeconfig: Path) -> None:
        _run(self.method(handle, entry, namespace=ctx.namespace), kubeconfig=kubeconfig)
        # No new pods go there, and the app's pods on it go.
        for pod in _pods_on({handle.name}, ctx):
            ctx.client.core.delete_namespaced_pod(pod["metadata"]["name"], ctx.namespace)

    def revert(self, handle: Handle, ctx: Context, *, kubeconfig: Path) -> RevertOutcome:
        _run(self.rollbacks(handle), kubeconfig=kubeconfig)
        return "reverted"

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        """Restored once the node is schedulable again. Side effects: a read of the cluster."""
        node = client.read(ObjectRef("Node", "", handle.name))
        return not node.get("spec", {}).get("unschedulable", False)

    @staticmethod
    def _node(handle: Handle) -> Json:
        # Exported without a cluster, an entry that names no node drains the Linux nodes.
        return {"name": handle.name} if handle.name else {"label_selector": "kubernetes.io/os=linux"}


class DrainZone:
    """A site outage: every node of a zone is cordoned and the app's pods on them deleted, so no node of the
    site can run pods; the revert uncordons them. The zone is the entry's, else the one its target runs in
    at injection (the active site's, after any failover). The drain waits until the app's pods have left the
    zone, as ``kubectl drain`` waits for its evictions."""

    def handle(
        self, entry: ChaosFault, *, fault_id: str, namespace: str, chaos_namespace: str, place: str
    ) -> Handle:
        handle = _direct_handle(entry, fault_id=fault_id, namespace=namespace, name=place)
        return handle.model_copy(update={"artifact": f"node:zone/{place}"}) if place else handle

    def method(self, handle: Handle, entry: ChaosFault, *, namespace: str) -> list[Json]:
        return [python_action("cordon-zone", "chaosk8s.node.actions", "cordon_node", self._zone(handle))]

    def rollbacks(self, handle: Handle) -> list[Json]:
        return [python_action("uncordon-zone", "chaosk8s.node.actions", "uncordon_node", self._zone(handle))]

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context, *, kubeconfig: Path) -> None:
        nodes = _nodes_in(handle.name, ctx.client)
        if not nodes:
            raise InjectionError(f"no node is in zone {handle.name!r}")
        _run(self.method(handle, entry, namespace=ctx.namespace), kubeconfig=kubeconfig)
        for pod in _pods_on(nodes, ctx):
            ctx.client.core.delete_namespaced_pod(pod["metadata"]["name"], ctx.namespace)
        for _ in range(ctx.settle_limit):
            ctx.settle()
            if self._drained(nodes, ctx):
                return

    def revert(self, handle: Handle, ctx: Context, *, kubeconfig: Path) -> RevertOutcome:
        if self.restored(ctx.client, handle):
            return "already_restored"  # someone uncordoned the zone's nodes already
        _run(self.rollbacks(handle), kubeconfig=kubeconfig)
        return "reverted"

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        """Restored once every node of the zone is schedulable again; which site the app runs in does not
        matter (a failover never moves it back). Side effects: a read of the cluster."""
        nodes = [n for n in client.list_nodes() if _zone_of(n) == handle.name]
        if not nodes:
            return None
        return not any(n.get("spec", {}).get("unschedulable", False) for n in nodes)

    @staticmethod
    def _zone(handle: Handle) -> Json:
        return {"label_selector": f"{ZONE_LABEL}={handle.name}"}

    @staticmethod
    def _drained(nodes: set[str], ctx: Context) -> bool:
        """No pod of the app is left on ``nodes``, and the scheduler has judged every replacement (placed it,
        or found no node for it). Side effects: a cluster read."""
        pods = ctx.client.list_pods(ctx.namespace, selector="")
        if any(pod.get("spec", {}).get("nodeName") in nodes for pod in pods):
            return False
        return all(
            pod.get("spec", {}).get("nodeName")
            or any(c.get("type") == "PodScheduled" for c in pod.get("status", {}).get("conditions") or [])
            for pod in pods
        )


# The forms of the action kinds, by kind; every Chaos Mesh kind takes the one object form.
_ACTIONS: dict[str, _Form] = {
    "terminate-pods": TerminatePods(),
    "drain-node": DrainNode(),
    "drain-zone": DrainZone(),
}
_OBJECT = ChaosMeshObject()


def _form(kind: str) -> _Form:
    return _OBJECT if CHAOS_KIND[kind].crd else _ACTIONS[kind]


class ChaosMechanism:
    def changed_object(self, entry: ChaosFault, namespace: str) -> None:
        """None: a chaos fault adds an object or acts on pods and nodes; it changes no deployed object."""
        return None

    def plan(self, entry: ChaosFault, ctx: Context, *, fault_id: str) -> Handle:
        form = _form(entry.inject.kind)
        place = ""
        if isinstance(form, DrainZone):
            place = str(
                entry.inject.spec.get("zone") or _zone_of(_read_node(_node_of(entry.target, ctx), ctx))
            )
        elif not entry.inject.chaos_kind.crd:
            # An action on pods or nodes needs its target placed on a node: else there is nothing to act on.
            place = str(entry.inject.spec.get("node") or _node_of(entry.target, ctx))
        handle = form.handle(
            entry,
            fault_id=fault_id,
            namespace=ctx.namespace,
            chaos_namespace=ctx.chaos_namespace,
            place=place,
        )
        # A drain acts on every pod of its nodes, not only the target's.
        if isinstance(form, DrainNode):
            handle = handle.model_copy(update={"affected": _services_on({place}, ctx)})
        elif isinstance(form, DrainZone):
            handle = handle.model_copy(update={"affected": _services_on(_nodes_in(place, ctx.client), ctx)})
        return handle

    def apply(self, handle: Handle, entry: ChaosFault, ctx: Context) -> None:
        _form(handle.kind).apply(handle, entry, ctx, kubeconfig=_kubeconfig(ctx))

    def revert(self, handle: Handle, ctx: Context) -> RevertOutcome:
        return _form(handle.kind).revert(handle, ctx, kubeconfig=_kubeconfig(ctx))

    def restored(self, client: KubeClient, handle: Handle) -> bool | None:
        return _form(handle.kind).restored(client, handle)

    def steps(
        self, entry: ChaosFault, *, namespace: str, chaos_namespace: str, baseline: Json | None
    ) -> Steps:
        """The activities the injector runs for ``entry``, its own id naming the object (no side effects)."""
        del baseline
        form = _form(entry.inject.kind)
        # Without a cluster, a zone left to the injection is the one the entry's artifact names.
        place = entry.inject.spec.get("node") or entry.inject.spec.get("zone")
        if place is None and isinstance(form, DrainZone):
            place = entry.responsible.names().get("zone")
        handle = form.handle(
            entry,
            fault_id=entry.id,
            namespace=namespace,
            chaos_namespace=chaos_namespace,
            place=str(place or ""),
        )
        return Steps(form.method(handle, entry, namespace=namespace), form.rollbacks(handle))


def _kubeconfig(ctx: Context) -> Path:
    kubeconfig = ctx.client.kubeconfig
    if kubeconfig is None:
        raise InjectionError("chaos actions need the cluster's kubeconfig")
    return kubeconfig


def _services_on(nodes: set[str], ctx: Context) -> tuple[str, ...]:
    """The services (pods' ``app`` labels) of the app with a pod on one of ``nodes``. Side effects: a cluster
    read."""
    found = {str(pod.get("metadata", {}).get("labels", {}).get("app") or "") for pod in _pods_on(nodes, ctx)}
    return tuple(sorted(found - {""}))


def _pods_on(nodes: set[str], ctx: Context) -> list[Json]:
    """The app's pods on one of ``nodes``. Side effects: a cluster read."""
    return [
        pod
        for pod in ctx.client.list_pods(ctx.namespace, selector="")
        if pod.get("spec", {}).get("nodeName") in nodes
    ]


def _read_node(name: str, ctx: Context) -> Json:
    return ctx.client.read(ObjectRef("Node", "", name))


def _zone_of(node: Json) -> str:
    return str((node.get("metadata", {}).get("labels") or {}).get(ZONE_LABEL, ""))


def _nodes_in(zone: str, client: KubeClient) -> set[str]:
    """The names of the nodes of ``zone``. Side effects: a cluster read."""
    return {str(n["metadata"]["name"]) for n in client.list_nodes() if zone and _zone_of(n) == zone}


def _node_of(target: str, ctx: Context) -> str:
    for pod in ctx.client.list_pods(ctx.namespace, selector=f"app={target}"):
        node = pod.get("spec", {}).get("nodeName")
        if node:
            return str(node)
    raise InjectionError(f"no pod of {target!r} is placed on a node to drain")
