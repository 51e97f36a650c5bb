"""The resource types the twin serves: what discovery lists and what the store accepts."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_KIND, CHAOS_VERSION, CRD_KINDS

KUBERNETES_VERSION = "v1.31.4"  # the version whose API the twin serves and whose kubelet it reports
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


_ALL = ("all",)
RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        short_names=("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=("status",),
    ),
    ResourceType("", "v1", "Node", "nodes", namespaced=False, short_names=("no",), subresources=("status",)),
    ResourceType(
        "",
        "v1",
        "Pod",
        "pods",
        short_names=("po",),
        categories=_ALL,
        subresources=("status", "log", "eviction"),
    ),
    ResourceType("", "v1", "Event", "events", short_names=("ev",)),
    ResourceType(
        "",
        "v1",
        "Service",
        "services",
        short_names=("svc",),
        categories=_ALL,
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=("status",),
    ),
    ResourceType("", "v1", "Endpoints", "endpoints", short_names=("ep",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
    ResourceType("", "v1", "Secret", "secrets"),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    ResourceType(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        short_names=("rc",),
        categories=_ALL,
        subresources=("status", "scale"),
    ),
    ResourceType(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        short_names=("pvc",),
        subresources=("status",),
    ),
    ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        short_names=("deploy",),
        categories=_ALL,
        subresources=("status", "scale"),
    ),
    ResourceType(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        short_names=("rs",),
        categories=_ALL,
        subresources=("status", "scale"),
    ),
    ResourceType(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        short_names=("sts",),
        categories=_ALL,
        subresources=("status", "scale"),
    ),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions"),
    ResourceType(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        short_names=("ds",),
        categories=_ALL,
        subresources=("status",),
    ),
    ResourceType("batch", "v1", "Job", "jobs", categories=_ALL, subresources=("status",)),
    ResourceType(RBAC_GROUP, "v1", "Role", "roles"),
    ResourceType(RBAC_GROUP, "v1", "RoleBinding", "rolebindings"),
    ResourceType(RBAC_GROUP, "v1", "ClusterRole", "clusterroles", namespaced=False),
    ResourceType(RBAC_GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    ResourceType(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        namespaced=False,
        categories=("api-extensions",),
        subresources=("status",),
    ),
    *(
        ResourceType(
            CHAOS_GROUP,
            CHAOS_VERSION,
            kind,
            CHAOS_KIND[kind].plural,
            categories=("chaos-mesh",),
            subresources=("status",),
        )
        for kind in CRD_KINDS
    ),
)

CHAOS_TYPES = tuple(r for r in RESOURCE_TYPES if r.group == CHAOS_GROUP)
BY_PLURAL: dict[tuple[str, str], ResourceType] = {(r.group, r.plural): r for r in RESOURCE_TYPES}
BY_KIND: dict[tuple[str, str], ResourceType] = {(r.api_version, r.kind): r for r in RESOURCE_TYPES}


def by_plural(group: str, plural: str) -> ResourceType | None:
    return BY_PLURAL.get((group, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    return BY_KIND.get((api_version, kind))
