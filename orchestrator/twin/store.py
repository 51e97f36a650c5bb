"""The twin's object store: plain JSON dicts exactly as the API serves them.

Stored dicts are never mutated in place: every write stores a fresh dict, so readers (the API, watches,
the runtime) may hold references without copying. Callers must not mutate what ``get``/``list`` return.
"""

from __future__ import annotations

import builtins
import copy
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from orchestrator.errors import ApiStatusError
from orchestrator.rng import derive
from orchestrator.twin.resources import ResourceType, by_kind, by_plural
from orchestrator.twin.selectors import Requirement, labels_match
from orchestrator.twin.timefmt import rfc3339
from orchestrator.twin.validation import validate, validate_update

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
T = TypeVar("T")

# How many changes a watch can resume from; older resourceVersions get 410 Gone, as etcd compaction does.
WATCH_HISTORY = 50_000
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's alphabet: no vowels, no look-alikes


@dataclass(frozen=True)
class Change:
    resource_version: int
    type: str  # ADDED | MODIFIED | DELETED
    group: str
    plural: str
    obj: Obj


def not_found(rtype: ResourceType, name: str) -> ApiStatusError:
    qualified = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    return ApiStatusError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        details={"name": name, "group": rtype.group, "kind": rtype.plural},
    )


def conflict(rtype: ResourceType, name: str) -> ApiStatusError:
    qualified = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    return ApiStatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details={"name": name, "group": rtype.group, "kind": rtype.plural},
    )


class Store:
    """Objects by resource type and (namespace, name), with resourceVersion, generation and uids."""

    def __init__(self, *, seed: int) -> None:
        self._objects: dict[tuple[str, str], dict[Key, Obj]] = {}
        self._rv = 0
        self._uids = derive(seed, "twin.uids")
        self._names = derive(seed, "twin.generated-names")
        self.changes: deque[Change] = deque(maxlen=WATCH_HISTORY)
        self.now = 0.0
        # Admission defaulting per (group, plural): called with the new object and the stored one (if any).
        self.defaulters: dict[tuple[str, str], Callable[[Obj, Obj | None], None]] = {}
        # The status a new object is stored with per (group, plural), as the registry's PrepareForCreate
        # sets it (a Pod is Pending from birth); types without one are created with no status.
        self.initial_status: dict[tuple[str, str], Callable[[Obj], Obj]] = {}
        self.deletions = 0
        # resourceVersion of the last change per (group, plural): lets controllers skip quiet steps.
        self.last_change: dict[tuple[str, str], int] = {}
        # The sorted keys ``list`` walks, per (group, plural) and namespace asked for (None for all); a
        # type's are dropped when one of its objects is created or deleted, as a write keeps every key.
        self._listed: dict[tuple[str, str], dict[str | None, builtins.list[Key]]] = {}
        # Values worked out from every object of one type (``kept``), with the type's last change they saw.
        self._kept: dict[tuple[str, str, str], tuple[int, Any]] = {}

    # -- identity ---------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def new_uid(self) -> str:
        return str(uuid.UUID(int=self._uids.getrandbits(128), version=4))

    def random_suffix(self, length: int = 5) -> str:
        return "".join(self._names.choice(_SUFFIX_ALPHABET) for _ in range(length))

    # -- reads ------------------------------------------------------------------------------------
    def find(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        bucket = self._objects.get((rtype.group, rtype.plural))
        if bucket is None:
            return None
        return bucket.get((namespace if rtype.namespaced else "", name))

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        found = self.find(rtype, namespace, name)
        if found is None:
            raise not_found(rtype, name)
        return found

    def list(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        *,
        labels: tuple[Requirement, ...] = (),
        fields: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Objects sorted by (namespace, name), as the API server lists them from etcd."""
        kind = (rtype.group, rtype.plural)
        bucket = self._objects.get(kind, {})
        scope = namespace if rtype.namespaced else None
        listed = self._listed.setdefault(kind, {})
        keys = listed.get(scope)
        if keys is None:
            keys = listed[scope] = sorted(k for k in bucket if scope is None or k[0] == scope)
        found = [bucket[k] for k in keys]
        if labels:
            found = [o for o in found if labels_match(labels, o["metadata"].get("labels"))]
        if fields is not None:
            found = [o for o in found if fields(o)]
        return found

    def kept(self, rtype: ResourceType, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, a value read off the objects of ``rtype`` only, kept under ``name`` until one of
        them is created, written or deleted; callers must not mutate what it returns."""
        kind = (rtype.group, rtype.plural)
        marker = self.last_change.get(kind, 0)
        found = self._kept.get((*kind, name))
        if found is not None and found[0] == marker:
            return cast(T, found[1])
        value = compute()
        self._kept[(*kind, name)] = (marker, value)
        return value

    def values(self, rtype: ResourceType) -> Iterable[Obj]:
        """Every object of a type in no particular order: for controllers that sort what they need."""
        return self._objects.get((rtype.group, rtype.plural), {}).values()

    # -- writes -----------------------------------------------------------------------------------
    def _bump(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _record(self, kind: str, rtype: ResourceType, obj: Obj) -> None:
        self.changes.append(Change(self._rv, kind, rtype.group, rtype.plural, obj))
        self.last_change[(rtype.group, rtype.plural)] = self._rv

    def _key(self, rtype: ResourceType, obj: Obj) -> Key:
        meta = obj["metadata"]
        return (meta.get("namespace", "") if rtype.namespaced else "", meta["name"])

    def create(
        self, rtype: ResourceType, obj: Obj, *, namespace: str | None = None, uid: str | None = None
    ) -> Obj:
        """Admit a new object (the caller's dict is taken over, not copied) and return it as stored;
        ``uid`` replaces the seeded one (the cluster's own identity, which no seed may reproduce)."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{self.random_suffix()}"
        if rtype.namespaced:
            given = meta.get("namespace")
            if namespace is not None and given and given != namespace:
                raise ApiStatusError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = given or namespace or "default"
        else:
            meta.pop("namespace", None)
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        prune_nulls(obj)
        self._default(rtype, obj, None)
        validate(rtype, obj)
        key = self._key(rtype, obj)
        bucket = self._objects.setdefault((rtype.group, rtype.plural), {})
        if key in bucket:
            qualified = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
            raise ApiStatusError(
                409,
                "AlreadyExists",
                f'{qualified} "{key[1]}" already exists',
                details={"name": key[1], "group": rtype.group, "kind": rtype.plural},
            )
        if rtype.namespaced and self.find(NAMESPACES, "", key[0]) is None:
            raise ApiStatusError(
                404,
                "NotFound",
                f'namespaces "{key[0]}" not found',
                details={"name": key[0], "kind": "namespaces"},
            )
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(field, None)
        drawn = self.new_uid()  # drawn even when ``uid`` is given: every other object keeps its seeded uid
        meta["uid"] = uid if uid is not None else drawn
        meta["creationTimestamp"] = rfc3339(self.now)
        meta["generation"] = 1
        meta["resourceVersion"] = self._bump()
        if "status" in rtype.subresources and rtype.kind not in ("Namespace", "Node"):
            obj.pop("status", None)  # status is the controllers' to write, never the creator's
            initial = self.initial_status.get((rtype.group, rtype.plural))
            if initial is not None:
                obj["status"] = initial(obj)
        bucket[key] = obj
        self._listed.pop((rtype.group, rtype.plural), None)
        self._record("ADDED", rtype, obj)
        return obj

    def replace(self, rtype: ResourceType, obj: Obj, *, subresource: str = "") -> Obj:
        """An update as ``PUT`` does it: optimistic concurrency on resourceVersion, spec/status split."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ApiStatusError(422, "Invalid", "metadata.name: Required value: name is required")
        if rtype.namespaced:
            meta.setdefault("namespace", "default")
        old = self.get(rtype, meta.get("namespace", ""), meta["name"])
        given_rv = meta.get("resourceVersion")
        if given_rv and given_rv != old["metadata"]["resourceVersion"]:
            raise conflict(rtype, meta["name"])
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        prune_nulls(obj)
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)  # only a delete starts a deletion
        has_status = "status" in rtype.subresources
        if subresource == "status":
            kept = {k: v for k, v in old.items() if k not in ("status", "metadata")}
            new = {**kept, "metadata": obj["metadata"], "status": obj.get("status", {})}
        elif has_status:
            new = {k: v for k, v in obj.items() if k != "status"}
            if "status" in old:
                new["status"] = old["status"]
        else:
            new = obj
        self._default(rtype, new, old)
        validate(rtype, new)
        validate_update(rtype, old, new)
        return self.put(rtype, new, old=old)

    def _default(self, rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
        defaulter = self.defaulters.get((rtype.group, rtype.plural))
        if defaulter is not None:
            defaulter(obj, old)

    def put(self, rtype: ResourceType, obj: Obj, *, old: Obj | None = None) -> Obj:
        """Store a new version of an existing object written by a controller; no admission checks."""
        key = self._key(rtype, obj)
        if old is None:
            old = self._objects[(rtype.group, rtype.plural)][key]
        meta = obj["metadata"] = {**obj["metadata"]}
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            # Identity never changes; a deletion, once started, cannot be undone by a write.
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
        generation = old["metadata"].get("generation", 1)
        # Pods keep generation 1 through binding and image updates, as the kubelet-facing fields do upstream.
        if rtype.kind != "Pod" and _spec_of(obj) != _spec_of(old):
            generation += 1
        meta["generation"] = generation
        meta["resourceVersion"] = self._bump()
        bucket = self._objects[(rtype.group, rtype.plural)]
        if key not in bucket:  # an object written back after its deletion comes again
            self._listed.pop((rtype.group, rtype.plural), None)
        bucket[key] = obj
        self._record("MODIFIED", rtype, obj)
        return obj

    def delete(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        """Remove an object; returns its last state with a fresh resourceVersion, as upstream does."""
        old = self.get(rtype, namespace, name)
        key = self._key(rtype, old)
        del self._objects[(rtype.group, rtype.plural)][key]
        self._listed.pop((rtype.group, rtype.plural), None)
        self.deletions += 1
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": self._bump()}}
        self._record("DELETED", rtype, gone)
        return gone

    def changed_since(self, resource_version: int, *rtypes: ResourceType) -> bool:
        """Whether any object of these types changed after ``resource_version``."""
        return any(self.last_change.get((r.group, r.plural), 0) > resource_version for r in rtypes)

    def changes_since(self, resource_version: int) -> builtins.list[Change] | None:
        """Changes after ``resource_version``; None if they were compacted away (410 Gone)."""
        if resource_version >= self._rv:
            return []
        if not self.changes or self.changes[0].resource_version > resource_version + 1:
            return None
        found: builtins.list[Change] = []
        # Newest first: the cost is the number of changes asked for, not the length of the history.
        for change in reversed(self.changes):
            if change.resource_version <= resource_version:
                break
            found.append(change)
        found.reverse()
        return found


def prune_nulls(value: Any) -> None:
    """Drop null fields in place, as decoding into Go structs does (``creationTimestamp: null`` in a
    template sent back by ``kubectl rollout undo`` must not make it differ from the stored one)."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            prune_nulls(item)
    elif isinstance(value, list):
        for item in value:
            prune_nulls(item)


def _spec_of(obj: Obj) -> Any:
    """What generation tracks: ``spec`` when an object has one, else everything but metadata and status."""
    if "spec" in obj:
        return obj["spec"]
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def deep(obj: Obj) -> Obj:
    """A private copy for a controller about to change one object (only on change, never per step)."""
    return copy.deepcopy(obj)


def resource_for(obj: Obj) -> ResourceType:
    """The resource type of a manifest document; unknown kinds are a 404 as the API server answers."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ApiStatusError(400, "BadRequest", "Object 'Kind' is missing in the document")
    rtype = by_kind(api_version, kind)
    if rtype is None:
        raise ApiStatusError(
            404,
            "NotFound",
            f'the server could not find the requested resource (kind "{kind}" in "{api_version}")',
        )
    return rtype


def _must(group: str, plural: str) -> ResourceType:
    found = by_plural(group, plural)
    assert found is not None, plural
    return found


NAMESPACES = _must("", "namespaces")
NODES = _must("", "nodes")
PODS = _must("", "pods")
EVENTS = _must("", "events")
SERVICES = _must("", "services")
ENDPOINTS = _must("", "endpoints")
ENDPOINT_SLICES = _must("discovery.k8s.io", "endpointslices")
DEPLOYMENTS = _must("apps", "deployments")
JOBS = _must("batch", "jobs")
REPLICASETS = _must("apps", "replicasets")
REPLICATION_CONTROLLERS = _must("", "replicationcontrollers")
DAEMONSETS = _must("apps", "daemonsets")
STATEFULSETS = _must("apps", "statefulsets")
CONTROLLER_REVISIONS = _must("apps", "controllerrevisions")
