"""The chaos-kind table: what each kind's spec must hold, and when a Chaos Mesh object is in effect."""

from __future__ import annotations

import pytest

from orchestrator.vocabulary.artifacts import ARTIFACT_KINDS
from orchestrator.vocabulary.chaos import CHAOS_KIND, CHAOS_KINDS, CRD_KINDS, in_effect, one_of


def test_every_kind_blames_only_known_artifact_kinds() -> None:
    for kind in CHAOS_KINDS:
        assert kind.artifacts and set(kind.artifacts) <= set(ARTIFACT_KINDS), kind.name


def test_chaos_mesh_kinds_are_the_crds_and_keep_the_table_order() -> None:
    assert CRD_KINDS == ("PodChaos", "NetworkChaos", "StressChaos", "DNSChaos", "IOChaos", "HTTPChaos")
    assert CHAOS_KIND["PodChaos"].plural == "podchaos"


@pytest.mark.parametrize(
    ("kind", "spec", "problem"),
    [
        ("PodChaos", {"action": "pod-kill"}, None),
        ("PodChaos", {"action": "explode"}, "PodChaos spec needs an 'action' (container-kill, pod-failure, "
         "pod-kill), not 'explode'"),
        ("StressChaos", {"stressors": {}}, None),
        ("StressChaos", {}, "StressChaos spec needs 'stressors'"),
        ("HTTPChaos", {"port": 80, "abort": True}, None),
        ("HTTPChaos", {"abort": True}, "HTTPChaos spec needs 'port' and one of abort, delay, replace, patch"),
        ("terminate-pods", {}, None),
        ("drain-node", {"node": "w1"}, None),
        ("drain-node", {"node": 3}, "drain-node spec needs the 'node' to drain"),
    ],
)  # fmt: skip
def test_a_spec_is_checked_against_its_kind(kind: str, spec: dict[str, object], problem: str | None) -> None:
    assert CHAOS_KIND[kind].spec_problem(spec) == problem


def test_choices_are_named_as_a_validation_message_names_them() -> None:
    assert one_of(("a",)) == "'a'"
    assert one_of(("a", "b", "c")) == "'a', 'b' or 'c'"


def test_an_object_acts_from_its_creation_until_its_duration_has_passed() -> None:
    spec = {"duration": "60s"}
    assert not in_effect(spec=spec, annotations=None, created=100.0, now=99.0)
    assert in_effect(spec=spec, annotations=None, created=100.0, now=100.0)
    assert in_effect(spec=spec, annotations=None, created=100.0, now=159.9)
    assert not in_effect(spec=spec, annotations=None, created=100.0, now=160.0)
    assert in_effect(spec={}, annotations={}, created=0.0, now=1e9)


def test_a_paused_object_does_not_act() -> None:
    paused = {"experiment.chaos-mesh.org/pause": "true"}
    assert not in_effect(spec={}, annotations=paused, created=0.0, now=1.0)
    resumed = {"experiment.chaos-mesh.org/pause": "false"}
    assert in_effect(spec={}, annotations=resumed, created=0.0, now=1.0)
