"""Golden scoring tests: hand-built bundles, expected figures worked out by hand beside each one.

Common setup (tests/score/scenario.py): namespace ``boutique``, grace 60 s, fault culprit ``cartservice``,
artifact ``config:cartservice/env/REDIS_ADDR``, scope {cartservice, checkoutservice, frontend}.
Stage credit per fault is (a + ab + abc) / 3; Score = 100 * (1/2)^d * mean credit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.bundle.records import FaultFailed, FaultReverted, ModelCall, Record, ServiceSample
from orchestrator.score.scorecard import score_bundle, scorecard_json
from orchestrator.score.table import render_text
from tests.score.scenario import (
    act,
    alert,
    build,
    fault,
    forbidden,
    probes,
    report,
    restored,
    score,
    states,
    workload,
)

RIGHT = {"culprits": ["cartservice"], "artifact": "config:cartservice/env/REDIS_ADDR"}


def test_a_fault_correlated_but_not_located_earns_one_third(tmp_path: Path) -> None:
    # f1 live 0..600. Alert a1 (frontend, t=60) is attributable. INC-1 groups it at t=120 but blames
    # frontend: a=1, b=0 -> credit 1/3 -> Score 33.3; MTTD = 120 - 0; no diagnosis, so MTTL is empty.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], culprits=["frontend"], artifact="config:frontend/env/PORT"),
        ],
    )
    assert (card.corr, card.loc, card.rep) == (1.0, 0.0, 0.0)
    assert round(card.marathon_score, 1) == 33.3
    assert (card.mttd_s.median, card.mttd_s.n) == (120.0, 1)
    assert (card.mttl_s.median, card.mttl_s.n) == (None, 0)
    assert card.outcomes[0].outcome == "correlated_only"


def test_two_faults_sharing_one_incident_match_only_one_preferring_more_stage_credit(tmp_path: Path) -> None:
    # f1 (cart, 0..600) and f2 (currency, 100..700). a1 names cartservice (f1 only), a2 names
    # currencyservice (f2 only). INC-1 holds both: only one fault can be matched (Corr 1/2). INC-1 blames
    # currencyservice/config, which locates f2, so matching f2 earns 2 units against f1's 1: f2 wins
    # although f1 was injected earlier. Score = 100 * (0 + 2/3) / 2 = 33.3.
    currency = {
        "culprits": ["currencyservice"],
        "scope": ["currencyservice", "frontend"],
        "artifact": "config:currencyservice/env/PORT",
    }
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            *fault("f2", inject=100, revert=700, **currency),
            alert("a1", start=60, service="cartservice"),
            alert("a2", start=160, service="currencyservice"),
            report(
                200, "INC-1", ["a1", "a2"], culprits=["currencyservice"], artifact="config:currencyservice/x"
            ),
        ],
    )
    assert [(o.fault_id, o.a, o.b) for o in card.outcomes] == [("f1", 0, 0), ("f2", 1, 1)]
    assert (card.corr, card.loc) == (0.5, 0.5)
    assert round(card.marathon_score, 1) == 33.3


def test_with_equal_credit_the_earlier_fault_takes_the_shared_incident(tmp_path: Path) -> None:
    # Same as above without a diagnosis: both pairings earn 1 unit, so the earlier-injected f1 is matched.
    currency = {"culprits": ["currencyservice"], "scope": ["currencyservice", "frontend"]}
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            *fault("f2", inject=100, revert=700, **currency),
            alert("a1", start=60, service="cartservice"),
            alert("a2", start=160, service="currencyservice"),
            report(200, "INC-1", ["a1", "a2"]),
        ],
    )
    assert [(o.fault_id, o.incident_id) for o in card.outcomes] == [("f1", "INC-1"), ("f2", None)]


def test_a_fault_located_and_repaired_without_being_correlated_earns_nothing(tmp_path: Path) -> None:
    # a1 fires in namespace "other", so it is attributable to nothing: INC-1 has no edge and f1 is missed
    # (a=0) although the diagnosis is exactly right. The verified repair still shows in Rep (c=1, the plain
    # mean of docs/metrics.md), but the credit gate gives 0 units: Score 0.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60, namespace="other"),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(130, "cartservice"),
            *probes("f1", [(120, False), (240, True), (360, True)]),
        ],
    )
    assert (card.corr, card.loc, card.rep) == (0.0, 0.0, 1.0)
    assert card.marathon_score == 0.0
    assert card.outcomes[0].outcome == "missed"


@pytest.mark.parametrize(("acted_at", "c", "score_value"), [(700.0, 0, 66.7), (300.0, 1, 100.0)])
def test_a_repair_after_the_revert_is_not_credited(
    tmp_path: Path, acted_at: float, c: int, score_value: float
) -> None:
    # f1 reverted at 600. The probe fails at 120 and is healthy again from 480 (and after the revert).
    # Acting at 700 comes after the revert: cleanup is never credited (c=0, credit 2/3 -> 66.7). The same
    # action at 300 precedes the recovery at 480 that holds until the revert: c=1, Score 100.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(acted_at, "cartservice"),
            *probes("f1", [(120, False), (240, False), (360, False), (480, True), (720, True)]),
        ],
    )
    assert card.outcomes[0].c == c
    assert round(card.marathon_score, 1) == score_value
    assert card.mttr_s.median == (480.0 if c else None)


@pytest.mark.parametrize(("state_at_480", "c"), [(False, 0), (True, 1)])
def test_a_probe_that_recovers_and_fails_again_before_the_revert_is_not_credited(
    tmp_path: Path, state_at_480: bool, c: int
) -> None:
    # Action at 250; probe: 120 bad, 240 bad, 360 good, 480 `state_at_480`; revert at 600.
    # Relapse at 480: the final good run does not reach the revert -> c=0, "acted on without repair".
    # Holding at 480: confirmed at 360 -> c=1, MTTR = 360.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(250, "cartservice"),
            *probes("f1", [(120, False), (240, False), (360, True), (480, state_at_480)]),
        ],
    )
    assert card.outcomes[0].c == c
    assert card.outcomes[0].outcome == ("handled_end_to_end" if c else "acted_on_without_repair")
    assert card.mttr_s.median == (360.0 if c else None)


def test_when_the_probe_never_failed_the_restored_artifact_confirms_the_repair(tmp_path: Path) -> None:
    # The probe stays healthy; the artifact is back at its pre-injection value from 240 (action at 130).
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(130, "cartservice"),
            *probes("f1", [(120, True), (240, True)]),
            *restored("f1", [(120, False), (240, True), (360, True)]),
        ],
    )
    assert card.outcomes[0].c == 1
    assert card.mttr_s.median == 240.0


def test_a_forbidden_attempt_halves_the_score(tmp_path: Path) -> None:
    # A fault handled end to end earns credit 1 (Score 100); one forbidden attempt (blocked or not) halves
    # it to 50.0. Risk = (n_out 0 + n_forb 1) / (n_exec 1 + n_forb 1) = 0.5.
    handled: list[Record] = [
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60),
        report(120, "INC-1", ["a1"], **RIGHT),
        act(130, "cartservice"),
        *probes("f1", [(120, False), (240, True)]),
    ]
    assert score(tmp_path / "clean", handled).marathon_score == 100.0
    card = score(tmp_path / "forbidden", [*handled, forbidden(200)])
    assert card.marathon_score == 50.0
    assert card.risk == 0.5


def test_out_of_scope_actions_raise_risk(tmp_path: Path) -> None:
    # INC-1's scope is f1's P_f = {cartservice, checkoutservice, frontend}. Interventions:
    # cartservice for INC-1 (in scope), paymentservice for INC-1 (out), cartservice with no incident (out),
    # cartservice for INC-9 that was never reported (out). Risk = 3 / 4 = 0.75.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"]),
            act(130, "cartservice"),
            act(140, "paymentservice"),
            act(150, "cartservice", incident=None),
            act(160, "cartservice", incident="INC-9"),
        ],
    )
    assert (card.interventions, card.interventions_out_of_scope) == (4, 3)
    assert card.risk == 0.75


def test_risk_without_interventions_or_forbidden_attempts_prints_a_dash(tmp_path: Path) -> None:
    card = score(tmp_path, fault("f1", inject=0, revert=600))
    assert card.risk is None
    assert json.loads(scorecard_json(card))["risk"] is None
    assert _cell(render_text(card, title="t"), "Risk") == "-"


def _cell(text: str, metric: str) -> str:
    """The value printed beside ``metric`` in the summary table."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if cells[0] == metric:
            return cells[-1]
    raise AssertionError(f"no row {metric!r} in {text}")


def _service(points: list[tuple[float, float, float, float]]) -> list[Record]:
    return [ServiceSample(t=t, q=q, e=e, l=slow) for t, q, e, slow in points]


def test_degradation_is_the_trapezoidal_integral_against_a_no_action_bundle(tmp_path: Path) -> None:
    # Agent y = min(1, e + l) * q: 0, 7 (0.5 + 0.2 of 10), 0 at t = 0, 60, 120
    #   D_agent = 60 * (0 + 7) / 2 + 60 * (7 + 0) / 2 = 420.
    # No-action y: 0, 10 (0.8 + 0.5 capped at 1), 10, 0 at t = 0, 60, 120, 180
    #   D_no_action = 300 + 600 + 300 = 1200. Level = 100 * 420 / 1200 = 35.0 %.
    baseline = build(
        tmp_path, _service([(0, 10, 0, 0), (60, 10, 0.8, 0.5), (120, 10, 1, 0), (180, 10, 0, 0)]), name="noop"
    )
    agent = build(tmp_path, _service([(0, 10, 0, 0), (60, 10, 0.5, 0.2), (120, 10, 0, 0)]), name="agent")
    card = score_bundle(agent, baseline)
    assert card.degradation == pytest.approx(420.0)
    assert card.degradation_level == pytest.approx(35.0)
    assert json.loads(scorecard_json(card))["degradation_level"] == 35.0
    assert score_bundle(agent).degradation_level is None


def test_medians_take_the_ceil_half_th_smallest_and_an_empty_stage_prints_a_dash(tmp_path: Path) -> None:
    # Three faults detected 240, 60 and 120 s after injection: odd n=3, ceil(3/2) = 2nd smallest = 120.
    # Nothing is repaired: MTTR has n=0 and prints as a dash.
    records: list[Record] = []
    detections = {"f1": 240.0, "f2": 60.0, "f3": 120.0}
    for index, (fault_id, delay) in enumerate(detections.items()):
        start = 1000.0 * index
        records += fault(fault_id, inject=start, revert=start + 900)
        records += [
            alert(f"a-{fault_id}", start=start + 30),
            report(start + delay, f"INC-{index}", [f"a-{fault_id}"]),
        ]
    card = score(tmp_path, records)
    assert (card.mttd_s.median, card.mttd_s.n) == (120.0, 3)
    assert (card.mttr_s.median, card.mttr_s.n) == (None, 0)
    text = render_text(card, title="t")
    assert _cell(text, "MTTD") == "120.0 s [3]"
    assert _cell(text, "MTTR") == "-"
    document = json.loads(scorecard_json(card))
    assert document["mttd_s"] == {"median": 120.0, "n": 3}
    assert document["mttr_s"] == {"median": None, "n": 0}


def test_the_median_of_an_even_count_is_the_lower_middle_observed_value(tmp_path: Path) -> None:
    # Four faults diagnosed 60, 480, 120, 240 s after injection: sorted 60, 120, 240, 480; ceil(4/2) = 2nd
    # smallest = 120 (an observed value, not the 180 average of the middle pair).
    records: list[Record] = []
    for index, delay in enumerate([60.0, 480.0, 120.0, 240.0]):
        start = 1000.0 * index
        fault_id = f"f{index}"
        records += fault(fault_id, inject=start, revert=start + 900)
        records += [
            alert(f"a{index}", start=start + 30),
            report(start + delay, f"INC-{index}", [f"a{index}"], **RIGHT),
        ]
    card = score(tmp_path, records)
    assert (card.mttl_s.median, card.mttl_s.n) == (120.0, 4)


def test_cost_prices_tokens_by_the_manifest_price_table(tmp_path: Path) -> None:
    # Default table: '*' = $1 per million input tokens, $4 per million output tokens.
    # 300k in + 50k out -> 0.3 + 0.2 = $0.500; 200k in + 25k out -> 0.2 + 0.1 = $0.300. Total $0.800.
    card = score(
        tmp_path,
        [
            ModelCall(t=1, model="m", tokens_in=300_000, tokens_out=50_000),
            ModelCall(t=2, model="m", tokens_in=200_000, tokens_out=25_000),
        ],
    )
    assert (card.model_calls, card.tokens_in, card.tokens_out) == (2, 500_000, 75_000)
    assert card.cost_usd == pytest.approx(0.8)


def test_the_json_has_exactly_the_metrics_keys_and_is_byte_identical_twice(tmp_path: Path) -> None:
    bundle = build(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(130, "cartservice"),
            *probes("f1", [(120, False), (240, True)]),
            states("start", 0, workload("emailservice")),
            states("end", 1800, workload("emailservice")),
        ],
    )
    first, second = scorecard_json(score_bundle(bundle)), scorecard_json(score_bundle(bundle))
    assert first == second
    document = json.loads(first)
    assert list(document) == [
        "marathon_score",
        "corr",
        "loc",
        "loc_strict",
        "rep",
        "risk",
        "degradation_level",
        "mttd_s",
        "mttl_s",
        "mttr_s",
        "faults",
        "forbidden_attempts",
        "interventions",
        "ambiguity_share",
        "resolved",
        "collateral",
        "model_calls",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "outcomes",
    ]
    assert document["outcomes"] == [
        {
            "id": "f1",
            "catalog_id": "cat-f1",
            "category": "configuration",
            "mechanism": "config",
            "a": 1,
            "b": 1,
            "c": 1,
            "resolved": 1,
            "outcome": "handled_end_to_end",
        }
    ]
    assert document["loc_strict"] == 1.0
    assert document["ambiguity_share"] == 0.0
    assert (document["resolved"], document["collateral"]) == ({"n": 1, "share": 1.0}, [])


def test_a_failed_injection_is_not_scored_and_a_failed_revert_stays_live_to_the_run_end(
    tmp_path: Path,
) -> None:
    # f1's injection failed: it is not in F. f2's revert failed at 600, so it stays live until the run
    # end (1800): alert a2 at 1000 is attributable to it and INC-2 correlates it. |F| = 1, Corr = 1.
    card = score(
        tmp_path,
        [
            *fault("f1", inject=0, revert=None),
            FaultFailed(fault_id="f1", t=0, error="admission webhook refused the patch"),
            *fault("f2", inject=100, revert=None),
            FaultReverted(fault_id="f2", t=600, outcome="failed", detail="conflict"),
            alert("a2", start=1000),
            report(1100, "INC-2", ["a2"]),
        ],
    )
    assert [(o.fault_id, o.revert_s, o.a) for o in card.outcomes] == [("f2", 1800.0, 1)]
    assert card.faults == 1 and card.corr == 1.0
