"""The object store's bookkeeping and the three patch formats, without a server."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver.patching import json_patch, merge_patch, strategic_merge_patch
from orchestrator.twin.controllers.workloads import object_key
from orchestrator.twin.selectors import labels_match, parse_field_selector, parse_label_selector
from orchestrator.twin.store import DEPLOYMENTS, NAMESPACES, Store
from tests.twin.api.support import NAMESPACE, deployment


def store_with_namespace(seed: int = 1) -> Store:
    store = Store(seed=seed)
    store.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    return store


def test_resource_versions_grow_and_generation_follows_only_the_spec() -> None:
    store = store_with_namespace()
    created = store.create(DEPLOYMENTS, deployment("web", image="a:1"))
    labelled = copy.deepcopy(created)
    labelled["metadata"]["labels"]["tier"] = "front"
    relabelled = store.replace(DEPLOYMENTS, labelled)
    respecced = copy.deepcopy(relabelled)
    respecced["spec"]["replicas"] = 3
    final = store.replace(DEPLOYMENTS, respecced)
    versions = [int(o["metadata"]["resourceVersion"]) for o in (created, relabelled, final)]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert [o["metadata"]["generation"] for o in (created, relabelled, final)] == [1, 1, 2]
    assert final["metadata"]["uid"] == created["metadata"]["uid"]


def test_uids_and_generated_names_depend_only_on_the_seed() -> None:
    def made(seed: int) -> tuple[str, str]:
        store = store_with_namespace(seed)
        obj = store.create(DEPLOYMENTS, deployment("web", image="a:1"))
        return obj["metadata"]["uid"], store.random_suffix()

    assert made(3) == made(3)
    assert made(3) != made(4)


def test_duplicates_stale_writes_and_missing_namespaces_are_refused() -> None:
    store = store_with_namespace()
    first = store.create(DEPLOYMENTS, deployment("web", image="a:1"))
    with pytest.raises(ApiStatusError) as duplicate:
        store.create(DEPLOYMENTS, deployment("web", image="a:1"))
    stale = copy.deepcopy(first)
    store.replace(DEPLOYMENTS, copy.deepcopy(first))
    with pytest.raises(ApiStatusError) as conflict:
        store.replace(DEPLOYMENTS, stale)
    elsewhere = deployment("web", image="a:1")
    elsewhere["metadata"]["namespace"] = "nowhere"
    with pytest.raises(ApiStatusError) as missing:
        store.create(DEPLOYMENTS, elsewhere)
    assert [(e.value.code, e.value.reason) for e in (duplicate, conflict, missing)] == [
        (409, "AlreadyExists"),
        (409, "Conflict"),
        (404, "NotFound"),
    ]


def test_invalid_objects_name_every_bad_field_at_once() -> None:
    store = store_with_namespace()
    bad = deployment("web", image="a:1", replicas=-1)
    bad["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 70000}]
    with pytest.raises(ApiStatusError) as caught:
        store.create(DEPLOYMENTS, bad)
    fields = [c["field"] for c in caught.value.details["causes"]]  # type: ignore[index,union-attr]
    assert caught.value.code == 422
    assert fields == ["spec.replicas", "spec.template.spec.containers[0].ports[0].containerPort"]
    assert store.list(DEPLOYMENTS) == []


def test_watch_history_resumes_from_a_version_and_reports_compaction() -> None:
    store = store_with_namespace()
    start = store.resource_version
    store.create(DEPLOYMENTS, deployment("web", image="a:1"))
    store.delete(DEPLOYMENTS, NAMESPACE, "web")
    assert [c.type for c in store.changes_since(start) or []] == ["ADDED", "DELETED"]
    store.changes.clear()
    store.create(DEPLOYMENTS, deployment("web", image="a:1"))
    assert store.changes_since(start) is None


def _listed_afresh(store: Store, namespace: str | None) -> list[str]:
    """Every deployment's name in (namespace, name) order, sorted here rather than by ``list``."""
    everything = sorted(
        store.values(DEPLOYMENTS), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])
    )
    return [o["metadata"]["name"] for o in everything if namespace in (None, o["metadata"]["namespace"])]


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["create", "delete", "write", "write-gone"]), st.integers(0, 7), st.booleans()
        ),
        max_size=30,
    )
)
def test_lists_stay_sorted_and_complete_through_creations_deletions_and_writes(
    steps: list[tuple[str, int, bool]],
) -> None:
    # The store keeps the sorted keys a list walks until an object comes or goes: every list, of one
    # namespace or of all, after any mix of creations, deletions and writes, is the one sorted afresh.
    store = store_with_namespace()
    store.create(NAMESPACES, {"metadata": {"name": "other"}})
    for edit, number, elsewhere in steps:
        namespace, name = ("other" if elsewhere else NAMESPACE), f"web-{number}"
        found = store.find(DEPLOYMENTS, namespace, name)
        if edit == "create" and found is None:
            store.create(DEPLOYMENTS, {**deployment(name, image="a:1"), "metadata": {
                "name": name, "namespace": namespace, "labels": {"app": name}}})  # fmt: skip
        elif edit == "delete" and found is not None:
            store.delete(DEPLOYMENTS, namespace, name)
        elif edit == "write" and found is not None:
            store.put(DEPLOYMENTS, {**found, "status": {"replicas": number}})
        elif edit == "write-gone" and found is not None:
            store.delete(DEPLOYMENTS, namespace, name)  # a controller writing back what it read before
            assert all(store.list(DEPLOYMENTS, scope) is not None for scope in (None, namespace))
            store.put(DEPLOYMENTS, {**found, "status": {"replicas": number}}, old=found)
        # The order the controllers walk a type in, which they once sorted themselves.
        assert store.list(DEPLOYMENTS) == sorted(store.values(DEPLOYMENTS), key=object_key)
        for scope in (None, NAMESPACE, "other"):
            assert [o["metadata"]["name"] for o in store.list(DEPLOYMENTS, scope)] == _listed_afresh(
                store, scope
            )


def test_set_based_label_selectors_and_field_selectors_match_as_upstream() -> None:
    labels = {"app": "cart", "tier": "backend"}
    assert labels_match(parse_label_selector("app in (cart, web),tier,!canary"), labels)
    assert not labels_match(parse_label_selector("app notin (cart)"), labels)
    assert labels_match(parse_label_selector("release!=v2"), labels)
    with pytest.raises(ApiStatusError):
        parse_label_selector("app in cart")
    running = parse_field_selector("status.phase=Running,spec.nodeName!=n1", kind="Pod")
    assert running({"status": {"phase": "Running"}, "spec": {"nodeName": "n2"}})
    assert not running({"status": {"phase": "Running"}, "spec": {"nodeName": "n1"}})
    with pytest.raises(ApiStatusError) as unsupported:
        parse_field_selector("spec.image=x", kind="Pod")
    assert unsupported.value.code == 400


def _pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "server",
                "image": "a:1",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            },
            {"name": "sidecar", "image": "s:1"},
        ]
    }


def test_strategic_merge_merges_containers_env_and_ports_by_key() -> None:
    target = _pod_spec()
    patch = {
        "$setElementOrder/containers": [{"name": "server"}, {"name": "sidecar"}],
        "containers": [
            {
                "name": "server",
                "image": "a:2",
                "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                "ports": [{"containerPort": 8080, "name": "http"}],
            }
        ],
    }
    merged = strategic_merge_patch(target, patch)
    server = merged["containers"][0]
    assert server["image"] == "a:2"
    assert server["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert server["ports"] == [{"containerPort": 8080, "protocol": "TCP", "name": "http"}]
    assert merged["containers"][1] == {"name": "sidecar", "image": "s:1"}
    assert target == _pod_spec()  # the input is never changed


def test_strategic_merge_directives_delete_items_and_replace_maps() -> None:
    patch = {
        "containers": [
            {"name": "sidecar", "$patch": "delete"},
            {"name": "server", "env": [{"name": "A", "$patch": "delete"}]},
        ]
    }
    merged = strategic_merge_patch(_pod_spec(), patch)
    assert [c["name"] for c in merged["containers"]] == ["server"]
    assert merged["containers"][0]["env"] == [{"name": "B", "value": "2"}]
    replaced = strategic_merge_patch(
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        {"strategy": {"$patch": "replace", "type": "Recreate"}},
    )
    assert replaced == {"strategy": {"type": "Recreate"}}


def test_merge_patch_replaces_lists_and_null_deletes() -> None:
    merged = merge_patch(_pod_spec(), {"containers": [{"name": "only", "image": "o:1"}], "hostNetwork": None})
    assert merged == {"containers": [{"name": "only", "image": "o:1"}]}


def test_json_patch_applies_operations_and_refuses_missing_paths() -> None:
    doc = {"spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}}}}
    patched = json_patch(
        doc,
        [
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/spec/template/metadata/labels/tier", "value": "front"},
            {"op": "test", "path": "/spec/replicas", "value": 3},
            {"op": "copy", "from": "/spec/replicas", "path": "/spec/minReadySeconds"},
            {"op": "remove", "path": "/spec/template/metadata/labels/app"},
        ],
    )
    assert patched == {
        "spec": {"replicas": 3, "minReadySeconds": 3, "template": {"metadata": {"labels": {"tier": "front"}}}}
    }
    with pytest.raises(ApiStatusError) as missing:
        json_patch(doc, [{"op": "replace", "path": "/spec/paused", "value": True}])
    with pytest.raises(ApiStatusError) as malformed:
        json_patch(doc, {"op": "replace"})
    assert (missing.value.code, malformed.value.code) == (422, 400)
    assert doc["spec"]["replicas"] == 1
