"""Golden tests of attribution for alerts already firing at an injection, and of the ambiguity share.

Common setup (tests/score/scenario.py): namespace ``boutique``, grace 60 s. Unless said otherwise f1 is the
cart fault, scope {cartservice, checkoutservice, frontend}, injected at 300 and reverted at 900, and alert
a0 has been firing since 60 (before f1), naming ``frontend`` (in f1's scope).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.bundle.records import AlertRecord, Record
from orchestrator.score.scorecard import scorecard_json
from orchestrator.score.table import render_text
from tests.score.scenario import alert, fault, report, score
from tests.score.test_golden import RIGHT, _cell


def _f1() -> list[Record]:
    return fault("f1", inject=300, revert=900)


def test_an_already_firing_alert_that_gets_a_new_series_in_scope_is_evidence_from_that_series_start(
    tmp_path: Path,
) -> None:
    # a0 HighErrorRate{frontend} fires from 60, before f1 (300). At 360 a new series of the same rule starts
    # for cartservice (in P_f1): a0 becomes attributable to f1 from 360. INC-1, reported at 420 with a0 only
    # and the right diagnosis, correlates and locates f1: a = b = 1, c = 0, credit 2/3 -> Score 66.7;
    # MTTD = 420 - 300 = 120. a0 and a1 are each attributable to f1 alone: ambiguity 0 of 2 = 0.0.
    card = score(
        tmp_path,
        [
            *_f1(),
            alert("a0", start=60),
            alert("a1", start=360, service="cartservice"),
            report(420, "INC-1", ["a0"], **RIGHT),
        ],
    )
    (f1,) = card.outcomes
    assert (f1.a, f1.b, f1.c) == (1, 1, 0)
    assert f1.alert_ids == ("a0", "a1")
    assert round(card.marathon_score, 1) == 66.7
    assert (card.mttd_s.median, card.mttd_s.n) == (120.0, 1)
    assert card.ambiguity_share == 0.0


def test_an_already_firing_alert_whose_severity_rises_for_its_own_service_is_evidence(tmp_path: Path) -> None:
    # a0 is a warning on checkoutservice (signal errors) firing since 60. At 400 the critical alert of the
    # same signal starts for checkoutservice: the warning's severity rose inside f1's window, so a0 counts
    # for f1 from 400. INC-1 at 450 lists a0 only: a = 1, MTTD = 150; not located (no culprit named):
    # Score 33.3.
    card = score(
        tmp_path,
        [
            *_f1(),
            alert("a0", start=60, service="checkoutservice", rule="ErrorsWarning", severity="warning",
                  signal="errors"),
            alert("a1", start=400, service="checkoutservice", rule="ErrorsCritical", severity="critical",
                  signal="errors"),
            report(450, "INC-1", ["a0"]),
        ],
    )  # fmt: skip
    assert [(o.a, o.b) for o in card.outcomes] == [(1, 0)]
    assert (card.mttd_s.median, round(card.marathon_score, 1)) == (150.0, 33.3)


def _raised(**changes: Any) -> list[Record]:
    """The new-series scenario of the first test, with one thing changed (see the cases below)."""
    firing: dict[str, Any] = {"start": 60.0}
    raising: dict[str, Any] = {"start": 360.0, "service": "cartservice"}
    reported_at = changes.pop("reported_at", 420.0)
    firing.update(changes.pop("firing", {}))
    raising.update(changes.pop("raising", {}))
    return [
        *_f1(),
        alert("a0", **firing),
        alert("a1", **raising),
        report(reported_at, "INC-1", ["a0"], **RIGHT),
    ]


@pytest.mark.parametrize(
    "changes",
    [
        # the new series names a service outside P_f1
        {"raising": {"service": "paymentservice"}},
        # a0 resolved at 340, before the new series started at 360: it was no longer firing
        {"firing": {"end": 340.0}},
        # a0 resolved at 200, before f1 was even injected
        {"firing": {"end": 200.0}},
        # a0 names a service outside P_f1 (its new series is in scope, and attributable on its own)
        {"firing": {"service": "paymentservice"}},
        # a0 is in another namespace
        {"firing": {"namespace": "other"}},
        # the alert that started is of another rule and of no higher severity: neither a new series nor a rise
        {"raising": {"rule": "LatencyHigh"}},
        # INC-1 was last reported at 330, before the new series started at 360: a0 was no evidence yet
        {"reported_at": 330.0},
    ],
    ids=["series-out-of-scope", "resolved-before", "resolved-before-injection", "firing-out-of-scope",
         "other-namespace", "other-rule", "reported-before"],
)  # fmt: skip
def test_an_already_firing_alert_does_not_count_without_a_raise_inside_the_window_that_it_outlives(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    card = score(tmp_path, _raised(**changes))
    assert [o.a for o in card.outcomes] == [0]
    assert card.marathon_score == 0.0


@pytest.mark.parametrize(
    ("firing", "raising"),
    [
        # critical after warning, same signal, but for frontend while the warning names checkoutservice
        ({"service": "checkoutservice", "severity": "warning", "signal": "errors"},
         {"service": "frontend", "severity": "critical", "signal": "errors"}),
        # the same service and signal, but a warning after a critical: severity fell
        ({"service": "checkoutservice", "severity": "critical", "signal": "errors"},
         {"service": "checkoutservice", "severity": "warning", "signal": "errors"}),
        # a critical of another signal on the same service
        ({"service": "checkoutservice", "severity": "warning", "signal": "errors"},
         {"service": "checkoutservice", "severity": "critical", "signal": "latency"}),
    ],
    ids=["other-service", "severity-fell", "other-signal"],
)  # fmt: skip
def test_a_higher_severity_counts_only_for_the_same_signal_and_service(
    tmp_path: Path, firing: dict[str, str], raising: dict[str, str]
) -> None:
    records = [
        *_f1(),
        alert("a0", start=60, rule="Firing", **firing),
        alert("a1", start=400, rule="Raising", **raising),
        report(450, "INC-1", ["a0"]),
    ]
    assert [o.a for o in score(tmp_path, records).outcomes] == [0]


def test_the_ambiguity_share_is_the_fraction_of_attributable_alerts_attributable_to_several_faults(
    tmp_path: Path,
) -> None:
    # f1 (cart, 0..600) and f2 (currency, scope {currencyservice, frontend}, 100..700). Alerts: a1 frontend
    # at 160 (both), a2 cartservice at 200 (f1), a3 currencyservice at 220 (f2), a4 paymentservice at 240
    # (neither: not counted). Ambiguity = 1 / 3 = 0.333, in the JSON and the table.
    currency = {"culprits": ["currencyservice"], "scope": ["currencyservice", "frontend"]}
    alerts: list[AlertRecord] = [
        alert("a1", start=160),
        alert("a2", start=200, service="cartservice"),
        alert("a3", start=220, service="currencyservice"),
        alert("a4", start=240, service="paymentservice"),
    ]
    card = score(
        tmp_path,
        [*fault("f1", inject=0, revert=600), *fault("f2", inject=100, revert=700, **currency), *alerts],
    )
    assert card.ambiguity_share == pytest.approx(1 / 3)
    assert json.loads(scorecard_json(card))["ambiguity_share"] == 0.333
    assert _cell(render_text(card, title="t"), "Ambiguity share") == "0.333"


def test_an_already_firing_alert_raised_for_a_second_fault_is_ambiguous(tmp_path: Path) -> None:
    # f0 (cart, 0..1000) raises a0 HighErrorRate{frontend} at 60. f1 (currency, scope {currencyservice,
    # frontend}, 300..900) raises a new series for currencyservice at 360: a0 is attributable to both
    # faults, a1 to f1 only. Ambiguity = 1 / 2 = 0.5.
    currency = {"culprits": ["currencyservice"], "scope": ["currencyservice", "frontend"]}
    card = score(
        tmp_path,
        [
            *fault("f0", inject=0, revert=1000),
            *fault("f1", inject=300, revert=900, **currency),
            alert("a0", start=60),
            alert("a1", start=360, service="currencyservice"),
        ],
    )
    assert [(o.fault_id, o.alert_ids) for o in card.outcomes] == [("f0", ("a0",)), ("f1", ("a0", "a1"))]
    assert card.ambiguity_share == 0.5


def test_without_an_attributable_alert_the_ambiguity_share_is_null_and_a_dash(tmp_path: Path) -> None:
    card = score(tmp_path, [*_f1(), alert("a4", start=400, service="paymentservice")])
    assert card.ambiguity_share is None
    assert json.loads(scorecard_json(card))["ambiguity_share"] is None
    assert _cell(render_text(card, title="t"), "Ambiguity share") == "-"
