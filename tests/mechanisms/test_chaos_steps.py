"""The chaos mechanism's steps: one description per form, the one the injector runs and export-ctk writes."""

from __future__ import annotations

import pytest

from orchestrator.catalog.faults import ChaosFault
from orchestrator.catalog.loading import Catalog, load_catalog
from orchestrator.mechanisms.chaos import ChaosMechanism
from orchestrator.mechanisms.registry import MECHANISMS
from orchestrator.vocabulary.chaos import CHAOS_KIND, CHAOS_KINDS

MECHANISM = ChaosMechanism()


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _first(catalog: Catalog, kind: str) -> ChaosFault:
    return next(e for e in catalog.entries if isinstance(e, ChaosFault) and e.inject.kind == kind)


def test_every_chaos_kind_of_the_vocabulary_is_used_by_the_catalog_and_has_steps(catalog: Catalog) -> None:
    for kind in CHAOS_KINDS:
        entry = _first(catalog, kind.name)
        steps = MECHANISM.steps(entry, namespace="ns", chaos_namespace="chaos", baseline=None)
        assert steps.method, kind.name
        modules = {step["provider"]["module"] for step in [*steps.method, *steps.rollbacks]}
        assert modules <= {"chaosk8s.crd.actions", "chaosk8s.pod.actions", "chaosk8s.node.actions"}


def test_a_chaos_mesh_object_is_created_and_deleted_by_the_same_name_in_the_chaos_namespace(
    catalog: Catalog,
) -> None:
    entry = _first(catalog, "IOChaos")
    steps = MECHANISM.steps(entry, namespace="ns", chaos_namespace="chaos", baseline=None)
    (create,), (delete,) = steps.method, steps.rollbacks
    body = create["provider"]["arguments"]["resource"]
    assert body["metadata"] == {"name": f"iochaos-{entry.id}", "namespace": "chaos"}
    assert delete["provider"]["arguments"] == {
        "group": "chaos-mesh.org",
        "version": "v1alpha1",
        "plural": CHAOS_KIND["IOChaos"].plural,
        "ns": "chaos",
        "name": f"iochaos-{entry.id}",
    }


def test_a_drained_node_is_the_one_the_entry_names_and_is_uncordoned_by_the_rollback(
    catalog: Catalog,
) -> None:
    entry = _first(catalog, "drain-node")
    steps = MECHANISM.steps(entry, namespace="ns", chaos_namespace="chaos", baseline=None)
    (cordon,), (uncordon,) = steps.method, steps.rollbacks
    assert cordon["provider"]["func"] == "cordon_node" and uncordon["provider"]["func"] == "uncordon_node"
    assert (
        cordon["provider"]["arguments"]
        == uncordon["provider"]["arguments"]
        == {"name": entry.inject.spec["node"]}
    )


def test_terminated_pods_need_no_rollback(catalog: Catalog) -> None:
    entry = _first(catalog, "terminate-pods")
    steps = MECHANISM.steps(entry, namespace="ns", chaos_namespace="chaos", baseline=None)
    assert steps.rollbacks == []
    assert steps.method[0]["provider"]["arguments"]["label_selector"] == f"app={entry.target}"


def test_every_mechanism_of_the_catalog_has_an_object_in_the_registry(catalog: Catalog) -> None:
    assert {entry.mechanism for entry in catalog.entries} == set(MECHANISMS)


def test_a_drained_zone_is_every_node_with_its_zone_label_and_is_uncordoned_by_the_rollback(
    catalog: Catalog,
) -> None:
    entry = _first(catalog, "drain-zone")
    zone = entry.responsible.names()["zone"]  # exported without a cluster: the zone the artifact names
    steps = MECHANISM.steps(entry, namespace="ns", chaos_namespace="chaos", baseline=None)
    (cordon,), (uncordon,) = steps.method, steps.rollbacks
    assert cordon["provider"]["func"] == "cordon_node" and uncordon["provider"]["func"] == "uncordon_node"
    selector = {"label_selector": f"topology.kubernetes.io/zone={zone}"}
    assert cordon["provider"]["arguments"] == uncordon["provider"]["arguments"] == selector
