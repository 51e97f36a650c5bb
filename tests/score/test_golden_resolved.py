"""Golden tests of collateral and resolved: what the agent left changed outside every fault's scope at the
run's end, and which faults were located and repaired without such a change.

Common setup (tests/score/scenario.py): namespace ``boutique``, grace 60 s. f1 is the cart fault, scope
{cartservice, checkoutservice, frontend}, live 0..600, handled end to end: alert a1 at 60, INC-1 reported at
120 with the right diagnosis, a rollback of cartservice for INC-1 at 130, probe bad at 120 and good at 240.
The snapshots list cartservice (in scope) and emailservice and paymentservice (outside every scope).
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.bundle.records import DecoyApplied, Record
from orchestrator.score.report import collateral_html
from orchestrator.score.scorecard import scorecard_json
from orchestrator.score.table import render_text
from tests.score.scenario import act, alert, fault, probes, report, score, states, workload
from tests.score.test_golden import RIGHT, _cell


def _handled() -> list[Record]:
    return [
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60),
        report(120, "INC-1", ["a1"], **RIGHT),
        act(130, "cartservice"),
        *probes("f1", [(120, False), (240, True)]),
    ]


def _start() -> Record:
    return states("start", 0, workload("cartservice"), workload("emailservice"), workload("paymentservice"))


def test_a_bundle_without_snapshots_has_unknown_collateral_and_resolved(tmp_path: Path) -> None:
    # f1 is located and repaired, but whether the agent changed anything outside the scopes cannot be told:
    # its resolved is null, and so are the count and the share. f2 (missed) is 0 whatever the collateral.
    card = score(tmp_path, [*_handled(), *fault("f2", inject=700, revert=900)])
    assert card.collateral is None
    assert [o.resolved for o in card.outcomes] == [None, 0]
    document = json.loads(scorecard_json(card))
    assert (document["collateral"], document["resolved"]) == (None, {"n": None, "share": None})
    assert [o["resolved"] for o in document["outcomes"]] == [None, 0]
    text = render_text(card, title="t")
    assert _cell(text, "Collateral") == _cell(text, "Resolved") == "unknown (no service snapshots)"


def test_a_change_outside_every_scope_by_an_intervention_for_the_faults_incident_unresolves_it(
    tmp_path: Path,
) -> None:
    # At 140 the agent scales emailservice (outside every scope) to 3 for INC-1; it is still 3 at the end.
    # Collateral: Deployment/emailservice replicas 1 -> 3, charged to INC-1, f1's matched incident: f1 is
    # located and repaired but not resolved (0 of 1). The scale is also out of scope for Risk: 1 / 2.
    card = score(
        tmp_path,
        [
            *_handled(),
            act(140, "emailservice", tool="scale_service"),
            _start(),
            states("end", 1800, workload("cartservice"), workload("emailservice", replicas=3),
                   workload("paymentservice")),
        ],
    )  # fmt: skip
    assert [(o.b, o.c, o.resolved) for o in card.outcomes] == [(1, 1, 0)]
    assert (card.resolved, card.resolved_share, card.risk) == (0, 0.0, 0.5)
    document = json.loads(scorecard_json(card))
    assert document["collateral"] == [
        {"workload": "Deployment/emailservice", "field": "replicas", "start": "1", "end": "3",
         "incidents": ["INC-1"]},
    ]  # fmt: skip
    assert document["resolved"] == {"n": 0, "share": 0.0}
    text = render_text(card, title="t")
    assert (_cell(text, "Collateral"), _cell(text, "Resolved")) == ("1", "0 of 1 (0.000)")


def test_what_is_not_collateral_or_not_charged_to_the_fault_leaves_it_resolved(tmp_path: Path) -> None:
    # - cartservice's image differs at the end (in f1's scope: not collateral);
    # - paymentservice's replicas differ, but no intervention touched it (not the agent's doing);
    # - emailservice's config differs after an update_config that references no incident: collateral,
    #   charged to no fault's incident.
    # Collateral lists only emailservice's config; f1 is resolved: 1 of 1.
    card = score(
        tmp_path,
        [
            *_handled(),
            act(150, "emailservice", incident=None, tool="update_config"),
            _start(),
            states("end", 1800, workload("cartservice", image="v2"), workload("emailservice", config="b"),
                   workload("paymentservice", replicas=2)),
        ],
    )  # fmt: skip
    assert card.collateral is not None
    assert [(d.workload, d.field, d.incidents) for d in card.collateral] == [
        ("Deployment/emailservice", "config", ())
    ]
    assert [o.resolved for o in card.outcomes] == [1]
    assert (card.resolved, card.resolved_share) == (1, 1.0)


def test_a_touched_workload_outside_the_scopes_is_collateral_only_if_it_ends_changed(tmp_path: Path) -> None:
    # A restart of emailservice for INC-1 changes none of its images, config or replicas: no collateral,
    # f1 resolved. Had the workload gone by the end, it would differ as present -> absent, charged to INC-1.
    same = [workload("cartservice"), workload("emailservice"), workload("paymentservice")]
    records = [*_handled(), act(140, "emailservice", tool="restart_service"), _start()]
    card = score(tmp_path / "restart", [*records, states("end", 1800, *same)])
    assert (card.collateral, card.resolved) == ((), 1)
    gone = score(tmp_path / "gone", [*records, states("end", 1800, *same[:1], *same[2:])])
    assert gone.collateral is not None
    assert [(d.workload, d.field, d.start, d.end) for d in gone.collateral] == [
        ("Deployment/emailservice", "exists", "present", "absent")
    ]
    assert gone.resolved == 0


def test_a_bundle_with_only_the_start_snapshot_has_unknown_collateral(tmp_path: Path) -> None:
    card = score(tmp_path, [*_handled(), _start()])
    assert (card.collateral, card.resolved, card.resolved_share) == (None, None, None)


def test_the_report_lists_each_collateral_difference_and_says_when_collateral_is_unknown(
    tmp_path: Path,
) -> None:
    records = [
        *_handled(),
        act(140, "emailservice", tool="scale_service"),
        _start(),
        states("end", 1800, workload("cartservice"), workload("emailservice", replicas=3),
               workload("paymentservice")),
    ]  # fmt: skip
    html = collateral_html(score(tmp_path / "changed", records))
    assert html.count('<tr class="difference">') == 1
    assert "<td>Deployment/emailservice</td><td>replicas</td><td>1</td><td>3</td><td>INC-1</td>" in html
    assert "unknown (no service snapshots)" in collateral_html(score(tmp_path / "old", _handled()))


def _decoy(t: float, target: str, **state: str) -> Record:
    return DecoyApplied(t=t, index=0, change="config", target=target, detail="LOG_LEVEL=debug",
                        workload=workload(target, **state))  # fmt: skip


def test_a_decoy_left_alone_is_no_collateral_and_a_decoy_rolled_back_is_collateral_and_out_of_scope(
    tmp_path: Path,
) -> None:
    # A decoy at 100 changes emailservice's config (a -> b) and paymentservice's (a -> c). The agent leaves
    # emailservice alone but restarts it for INC-1 (touched, ends as the decoy left it: expected, so no
    # difference); it rolls back paymentservice for INC-1 at 160, which ends at config a again: a difference
    # from what the decoy left (c -> a) charged to INC-1, so f1 is not resolved. The rollback of a decoy is
    # out of scope whatever the incident says: Risk = 2 / 3 (the restart of emailservice is out of scope
    # too, as it lies outside INC-1's scope; the rollback of cartservice is in scope).
    card = score(
        tmp_path,
        [
            *_handled(),
            _decoy(100, "emailservice", config="b"),
            _decoy(100, "paymentservice", config="c"),
            act(150, "emailservice", tool="restart_service"),
            act(160, "paymentservice", tool="rollback_service"),
            _start(),
            states("end", 1800, workload("cartservice"), workload("emailservice", config="b"),
                   workload("paymentservice", config="a")),
        ],
    )  # fmt: skip
    assert card.collateral is not None
    assert [(d.workload, d.field, d.incidents) for d in card.collateral] == [
        ("Deployment/paymentservice", "config", ("INC-1",))
    ]
    assert [(o.b, o.c, o.resolved) for o in card.outcomes] == [(1, 1, 0)]
    assert (card.interventions, card.interventions_out_of_scope) == (3, 2)


def test_rolling_back_a_decoyed_service_whose_latest_change_is_a_fault_is_not_a_decoy_rollback(
    tmp_path: Path,
) -> None:
    # A decoy changes cartservice at 10; f1, a config fault on cartservice, is injected after it, at 20.
    # The agent's rollback at 130 undoes f1's change, the latest on cartservice: in scope (INC-1's scope holds
    # cartservice), so Risk is 0.
    card = score(
        tmp_path,
        [
            _decoy(10, "cartservice", config="b"),
            *fault("f1", inject=20, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(130, "cartservice", tool="rollback_service"),
            *probes("f1", [(120, False), (240, True)]),
        ],
    )
    assert (card.interventions, card.interventions_out_of_scope, card.risk) == (1, 0, 0.0)


def test_rolling_back_a_decoy_inside_the_incidents_scope_is_still_out_of_scope(tmp_path: Path) -> None:
    # checkoutservice is in INC-1's scope, and its latest change is a decoy at 100: rolling it back at 160
    # for INC-1 is out of scope (Risk 1 / 2), where a restart of it would not be.
    card = score(
        tmp_path,
        [
            *_handled(),
            _decoy(100, "checkoutservice", config="b"),
            act(160, "checkoutservice", tool="rollback_service"),
        ],
    )
    assert (card.interventions, card.interventions_out_of_scope, card.risk) == (2, 1, 0.5)
    again = score(
        tmp_path / "restart",
        [
            *_handled(),
            _decoy(100, "checkoutservice", config="b"),
            act(160, "checkoutservice", tool="restart_service"),
        ],
    )
    assert (again.interventions, again.interventions_out_of_scope, again.risk) == (2, 0, 0.0)
