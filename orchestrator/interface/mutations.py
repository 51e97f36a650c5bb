"""The mutating tools: what a person with kubectl (and a build pipeline) would do, nothing more.

restart = the ``kubectl.kubernetes.io/restartedAt`` annotation on the pod template (``kubectl rollout
restart``); scale = the scale subresource; rollback = the previous revision's template re-applied
(``kubectl rollout undo``: a ReplicaSet's, or a StatefulSet's ControllerRevision's); update_config = a
strategic-merge patch of the container; set_feature_flag =
the flag file in the flag ConfigMap; update_service = a JSON patch of the workload's Service (a port's
``targetPort``/``port``, the selector); uncordon_node = ``spec.unschedulable`` cleared on one node;
delete_resource = deleting one pod; propose/build/submit = the
source repair pipeline of ``sources.py``, publishing each build to the registry namespace.

Each handler returns ``(result, targets)``: the JSON result and the services it acted on.
"""

from __future__ import annotations

from typing import Any

from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import CHANGE_CAUSE, Patch, field_patch, restart_patch
from orchestrator.errors import ClusterError, InjectionError, InputError
from orchestrator.interface import args as a
from orchestrator.interface.backend import Backend, current_revision, revisions
from orchestrator.interface.reads import flag_configmap
from orchestrator.interface.sources import REGISTRY_NAMESPACE, SourceError, registry_configmap, split_image

Json = dict[str, Any]
Outcome = tuple[Json, list[str]]


def _ref(backend: Backend, service: str) -> ObjectRef:
    return backend.workload_ref(service)


def restart_service(backend: Backend, args: a.RestartService) -> Outcome:
    patch, stamp = restart_patch(backend.now_epoch())
    backend.kube.patch(_ref(backend, args.service), patch)
    return {"service": args.service, "restarted_at": stamp}, [args.service]


def scale_service(backend: Backend, args: a.ScaleService) -> Outcome:
    before = backend.workload(args.service)["spec"].get("replicas", 1)
    backend.kube.scale(_ref(backend, args.service), args.replicas)
    return {"service": args.service, "replicas": args.replicas, "previous_replicas": before}, [args.service]


def rollback_service(backend: Backend, args: a.RollbackService) -> Outcome:
    ref = _ref(backend, args.service)
    workload = backend.kube.read(ref)
    by_revision = revisions(backend, ref, workload)
    current = current_revision(ref, workload, by_revision)
    if args.to_revision is not None:
        target = args.to_revision
        if target not in by_revision:
            raise InputError(f"{args.service} has no revision {target}; revisions: {sorted(by_revision)}")
    else:
        earlier = [r for r in by_revision if 0 < r < current]
        if not earlier:
            raise InputError(
                f"{args.service} has no revision before the current one ({current}) to roll back to"
            )
        target = max(earlier)
    if target == current:
        return {"service": args.service, "revision": current, "note": "already at that revision"}, [
            args.service
        ]
    revision = by_revision[target]
    template = revision.template
    # As ``kubectl rollout undo``: the revision's template, and a Deployment's change cause with it.
    cause = (revision.holder["metadata"].get("annotations") or {}).get(CHANGE_CAUSE)
    operations: list[Json] = [{"op": "replace", "path": "/spec/template", "value": template}]
    if cause is not None and ref.kind == "Deployment":
        annotations = dict(workload["metadata"].get("annotations") or {})
        annotations[CHANGE_CAUSE] = cause
        operations.append({"op": "add", "path": "/metadata/annotations", "value": annotations})
    backend.kube.patch(ref, Patch("json", operations))
    images = [c.get("image") for c in template.get("spec", {}).get("containers", [])]
    return {"service": args.service, "from_revision": current, "to_revision": target, "images": images}, [
        args.service
    ]


def update_config(backend: Backend, args: a.UpdateConfig) -> Outcome:
    ref = _ref(backend, args.service)
    deployment = backend.workload(args.service)
    container = backend.container_of(args.service)
    names = [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    if container not in names:
        container = names[0]
    change: Json = {"name": container}
    if args.env:
        change["env"] = [
            {"name": name, "value": value} if value is not None else {"name": name, "$patch": "delete"}
            for name, value in sorted(args.env.items())
        ]
    if args.resources:
        change["resources"] = args.resources.model_dump(exclude_none=True)
    if len(change) > 1:
        body = {"spec": {"template": {"spec": {"containers": [change]}}}}
        deployment = backend.kube.patch(ref, Patch("strategic", body))
    for port, number in sorted((args.ports or {}).items()):
        try:
            patch = field_patch(deployment, field=f"port/{port}", value=number, container=container)
        except InjectionError as exc:  # it names the missing port; for an operator that is bad input
            raise InputError(f"{args.service}: {exc}") from exc
        deployment = backend.kube.patch(ref, patch)
    changed = {
        k: v for k, v in args.model_dump(exclude_none=True).items() if k in ("env", "resources", "ports")
    }
    return {"service": args.service, "container": container, "changed": changed}, [args.service]


def set_feature_flag(backend: Backend, args: a.SetFeatureFlag) -> Outcome:
    configmap = flag_configmap(backend, backend.namespace)
    if configmap is None:
        raise InputError("this application serves no feature flags")
    ref = ObjectRef("ConfigMap", backend.namespace, configmap["metadata"]["name"])
    configmap.setdefault("kind", "ConfigMap")
    backend.kube.patch(ref, field_patch(configmap, field=f"flags/{args.flag}", value=args.variant))
    owners = [f.service for f in backend.topology.feature_flags if f.name == args.flag]
    return {"flag": args.flag, "variant": args.variant}, owners


def update_service(backend: Backend, args: a.UpdateService) -> Outcome:
    """Patch the workload's Service (``kubectl edit service``): one port's numbers, or the selector."""
    ref = ObjectRef("Service", backend.namespace, args.service)
    service = backend.kube.read(ref)
    spec = service.get("spec") or {}
    ports: list[Json] = list(spec.get("ports") or [])
    operations: list[Json] = []
    previous: Json = {}
    changed: Json = {}
    if args.target_port is not None or args.port is not None:
        names = [str(p.get("name", "")) for p in ports]
        if args.port_name is not None:
            if args.port_name not in names:
                raise InputError(f"service {args.service} has no port {args.port_name!r}; ports: {names}")
            index = names.index(args.port_name)
        elif len(ports) == 1:
            index = 0
        else:
            raise InputError(f"service {args.service} has {len(ports)} ports {names}: name one in port_name")
        for key, value in (("targetPort", args.target_port), ("port", args.port)):
            if value is None:
                continue
            previous[key] = ports[index].get(key)
            changed[key] = value
            operations.append({"op": "add", "path": f"/spec/ports/{index}/{key}", "value": value})
    if args.selector is not None:
        previous["selector"] = spec.get("selector")
        changed["selector"] = dict(sorted(args.selector.items()))
        operations.append({"op": "add", "path": "/spec/selector", "value": changed["selector"]})
    if not operations:
        raise InputError("update_service needs target_port, port or selector")
    backend.kube.patch(ref, Patch("json", operations))
    return {"service": args.service, "changed": changed, "previous": previous}, [args.service]


def uncordon_node(backend: Backend, args: a.UncordonNode) -> Outcome:
    """Make a node schedulable again (``kubectl uncordon``). The targets are the workloads named as
    displaced, and those with a pod on the node or waiting to be scheduled."""
    ref = ObjectRef("Node", "", args.node)
    node = backend.kube.read(ref)
    was = bool((node.get("spec") or {}).get("unschedulable", False))
    backend.kube.patch(ref, Patch("strategic", {"spec": {"unschedulable": False}}))
    affected = set(args.services)
    for pod in backend.kube.list_objects("Pod", namespace=backend.namespace):
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") == args.node or (
            not spec.get("nodeName") and status.get("phase", "Pending") == "Pending"
        ):
            owners = [w for w in backend.workloads if str(pod["metadata"]["name"]).startswith(f"{w}-")]
            if owners:
                affected.add(max(owners, key=len))
    return {"node": args.node, "was_cordoned": was, "unschedulable": False}, sorted(affected)


def delete_resource(backend: Backend, args: a.DeleteResource) -> Outcome:
    # The policy allows only pods of the application's workloads here.
    backend.kube.delete(ObjectRef("Pod", backend.namespace, args.name))
    owners = [w for w in backend.workloads if args.name.startswith(f"{w}-")]
    return {"deleted": f"pod/{args.name}"}, [max(owners, key=len)] if owners else []


def current_image(backend: Backend, service: str, namespace: str | None = None) -> str:
    """The image the service's main container runs now."""
    deployment = backend.workload(service, namespace)
    container = backend.container_of(service)
    containers = deployment["spec"]["template"]["spec"]["containers"]
    chosen = next((c for c in containers if c["name"] == container), containers[0])
    return str(chosen["image"])


def propose_patch(backend: Backend, args: a.ProposePatch) -> Outcome:
    patch = backend.sources.propose(
        service=args.service, image=current_image(backend, args.service), path=args.path, diff=args.diff
    )
    return {
        "patch_id": patch.patch_id,
        "service": args.service,
        "path": patch.path,
        "base_tag": patch.derived_from,
    }, [args.service]


def build_service_image(backend: Backend, args: a.BuildServiceImage) -> Outcome:
    build = backend.sources.build(
        service=args.service, patch_id=args.patch_id, image=current_image(backend, args.service)
    )
    body = registry_configmap(build)
    backend.kube.ensure_namespace(REGISTRY_NAMESPACE)
    try:
        backend.kube.create("ConfigMap", namespace=REGISTRY_NAMESPACE, body=body)
    except ClusterError as exc:
        if "409" not in str(exc):
            raise
        ref = ObjectRef("ConfigMap", REGISTRY_NAMESPACE, body["metadata"]["name"])
        backend.kube.patch(ref, Patch("strategic", {"data": body["data"]}))
    # The answer names the image only: whether the build repairs the defect is for the agent to find out.
    return {"service": args.service, "image": build.image, "tag": build.tag, "patch_id": args.patch_id}, [
        args.service
    ]


def submit_patch(backend: Backend, args: a.SubmitPatch) -> Outcome:
    build = backend.sources.built(args.service, args.image)
    if build is None:
        raise SourceError(
            f"image {args.image!r} was not built for {args.service}; use build_service_image first"
        )
    deployment = backend.workload(args.service)
    container = backend.container_of(args.service)
    names = [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    body = {
        "metadata": {"annotations": {CHANGE_CAUSE: f"{args.service}: patched build {build.tag}"}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": container if container in names else names[0], "image": build.image}
                    ]
                }
            }
        },
    }
    backend.kube.patch(_ref(backend, args.service), Patch("strategic", body))
    return {
        "service": args.service,
        "image": build.image,
        "previous_tag": split_image(_previous(deployment, container))[1],
    }, [args.service]


def _previous(deployment: Json, container: str) -> str:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return str(next((c for c in containers if c["name"] == container), containers[0])["image"])
