"""The building blocks of the scorer: attribution, matching tie-breaks, artifact normalisation, medians."""

from __future__ import annotations

import pytest

from orchestrator.score.attribution import Fault, is_attributable, names_service_in
from orchestrator.score.matching import incident_order_key, match_faults
from orchestrator.score.scorecard import median
from orchestrator.score.stages import normalise_artifact
from tests.score.scenario import alert

SCOPE = frozenset({"cartservice", "frontend"})


def _fault(inject: float = 100.0, revert: float = 400.0) -> Fault:
    return Fault(
        fault_id="f1",
        catalog_id="c",
        category="k",
        mechanism="config",
        namespace="boutique",
        culprits=frozenset({"cartservice"}),
        artifact="config:cartservice/env/X",
        scope=SCOPE,
        inject_s=inject,
        revert_s=revert,
        window_end_s=revert + 60.0,
        rank=0,
    )


@pytest.mark.parametrize(("start", "expected"), [(99.9, False), (100.0, True), (460.0, True), (460.1, False)])
def test_an_alert_is_attributable_only_inside_inject_to_revert_plus_grace(
    start: float, expected: bool
) -> None:
    assert is_attributable(alert("a", start=start), _fault()) is expected


def test_an_alert_in_another_namespace_or_naming_an_unaffected_service_is_not_attributable() -> None:
    assert not is_attributable(alert("a", start=200, namespace="other"), _fault())
    assert not is_attributable(alert("a", start=200, service="paymentservice"), _fault())


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"pod": "cartservice-5d8f7c9b4d-x2k9p"}, True),  # Deployment pod
        ({"pod": "frontend-0"}, True),  # StatefulSet pod
        ({"pod": "paymentservice-5d8f7c9b4d-x2k9p"}, False),
        ({"workload": "opentelemetry-demo-frontend"}, True),  # Helm release prefix
        ({"deployment": "cartservice"}, True),
        ({"service": "paymentservice", "pod": "cartservice-0"}, False),  # a named service wins
        ({}, False),
    ],
)
def test_an_alert_without_a_service_is_judged_by_its_workload_or_pod(
    labels: dict[str, str], expected: bool
) -> None:
    assert names_service_in(labels, SCOPE) is expected


def test_incident_ids_order_naturally() -> None:
    assert sorted(["INC-10", "INC-2", "INC-1"], key=incident_order_key) == ["INC-1", "INC-2", "INC-10"]


def test_a_maximum_matching_beats_any_preference() -> None:
    # f1 could take I1 or I2; f2 only I1. Both are matched only if f1 takes I2.
    assert match_faults(["f1", "f2"], {("f1", "I1"): 3, ("f1", "I2"): 1, ("f2", "I1"): 1}) == {
        "f1": "I2",
        "f2": "I1",
    }


def test_more_stage_credit_beats_an_earlier_fault() -> None:
    assert match_faults(["f1", "f2"], {("f1", "I1"): 1, ("f2", "I1"): 2}) == {"f2": "I1"}


def test_with_equal_credit_the_earlier_fault_and_then_the_lower_incident_id_win() -> None:
    edges = {("f1", "INC-10"): 1, ("f1", "INC-2"): 1, ("f2", "INC-10"): 1, ("f0", "INC-10"): 1}
    # All three faults want INC-10; only two incidents exist. Order f0, f1, f2: f0 and f1 are matched, and
    # f0 can only take INC-10, so f1 takes INC-2.
    assert match_faults(["f0", "f1", "f2"], edges) == {"f0": "INC-10", "f1": "INC-2"}
    # With a choice between two incidents, a fault takes the lower id.
    assert match_faults(["f1"], {("f1", "INC-10"): 1, ("f1", "INC-2"): 1}) == {"f1": "INC-2"}


def test_release_artifacts_compare_without_registry_case_or_whitespace() -> None:
    ours = "release:checkoutservice@v0.10.6-2"
    assert (
        normalise_artifact(" Release : us-docker.pkg.dev/google-samples/checkoutservice@V0.10.6-2 ") == ours
    )
    assert normalise_artifact("config:cartservice/env/REDIS_ADDR") == "config:cartservice/env/redis_addr"
    assert normalise_artifact("release:checkoutservice:v0.10.6-2") != ours


@pytest.mark.parametrize(
    ("values", "expected"), [([], None), ([5.0], 5.0), ([3.0, 1.0], 1.0), ([9.0, 1.0, 5.0], 5.0)]
)
def test_the_median_is_the_ceil_half_th_smallest(values: list[float], expected: float | None) -> None:
    assert median(values).median == expected
    assert median(values).n == len(values)
