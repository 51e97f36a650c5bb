"""Property tests of the scorer over random small runs (built in memory, no files)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.bundle.building import sample_manifest
from orchestrator.bundle.reader import Bundle, bundle_from_records
from orchestrator.bundle.records import IncidentReport, Record, RunEnded
from orchestrator.score.scorecard import score_bundle
from tests.score.scenario import NS, act, alert, fault, forbidden, probes, report

SERVICES = ("frontend", "cartservice", "checkoutservice", "paymentservice", "currencyservice")
KINDS = ("config", "release", "network", "pod")


@st.composite
def runs(draw: st.DrawFn) -> list[Record]:
    records: list[Record] = []
    for index in range(draw(st.integers(1, 6))):
        inject = float(draw(st.integers(0, 100)) * 10)
        scope = draw(st.lists(st.sampled_from(SERVICES), min_size=1, max_size=4, unique=True))
        records += fault(
            f"f{index}",
            inject=inject,
            revert=inject + draw(st.integers(6, 60)) * 10,
            culprits=[draw(st.sampled_from(scope))],
            scope=scope,
            artifact=f"{draw(st.sampled_from(KINDS))}:{scope[0]}",
        )
        states = draw(st.lists(st.booleans(), max_size=6))
        records += probes(f"f{index}", [(inject + 60.0 * (n + 1), ok) for n, ok in enumerate(states)])
    alert_ids = []
    for index in range(draw(st.integers(0, 15))):
        alert_ids.append(f"a{index}")
        namespace = draw(st.sampled_from([NS, NS, NS, "elsewhere"]))
        start = float(draw(st.integers(0, 180)) * 10)
        records.append(
            alert(f"a{index}", start=start, service=draw(st.sampled_from(SERVICES)), namespace=namespace)
        )
    for index in range(draw(st.integers(0, 6))):
        grouped = draw(st.lists(st.sampled_from(alert_ids), max_size=5, unique=True)) if alert_ids else []
        culprit = draw(st.sampled_from(SERVICES))
        records.append(
            report(
                float(draw(st.integers(0, 180)) * 10),
                f"INC-{index}",
                grouped,
                culprits=[culprit],
                artifact=f"{draw(st.sampled_from(KINDS))}:{culprit}",
            )
        )
    for _ in range(draw(st.integers(0, 4))):
        target = draw(st.sampled_from(SERVICES))
        records.append(
            act(float(draw(st.integers(0, 180)) * 10), target, incident=f"INC-{draw(st.integers(0, 6))}")
        )
    if draw(st.booleans()):
        records.append(forbidden(500.0))
    return records


def _bundle(records: list[Record]) -> Bundle:
    return bundle_from_records([sample_manifest(), *records, RunEnded(t=2400.0)], path=Path("memory"))


def _with_reports(records: list[Record], reports: list[Record]) -> list[Record]:
    return [r for r in records if not isinstance(r, IncidentReport)] + reports


@settings(max_examples=150, deadline=None)
@given(runs())
def test_filing_every_alert_in_one_incident_never_matches_more_than_one_fault(records: list[Record]) -> None:
    alert_ids = [r.alert_id for r in records if r.kind == "alert"]
    one = _with_reports(records, [report(1800.0, "INC-ALL", alert_ids, culprits=["cartservice"])])
    card = score_bundle(_bundle(one))
    assert sum(o.a for o in card.outcomes) <= 1


@settings(max_examples=150, deadline=None)
@given(runs(), st.lists(st.sampled_from(SERVICES), max_size=3))
def test_adding_an_unrelated_incident_never_lowers_corr(records: list[Record], services: list[str]) -> None:
    before = score_bundle(_bundle(records)).corr
    # Alerts from another namespace are attributable to no fault: the new incident is unrelated.
    noise: list[Record] = [
        alert(f"noise{n}", start=300.0, service=s, namespace="elsewhere") for n, s in enumerate(services)
    ]
    extra = report(900.0, "INC-UNRELATED", [f"noise{n}" for n in range(len(services))], culprits=["frontend"])
    assert score_bundle(_bundle([*records, *noise, extra])).corr >= before


@settings(max_examples=150, deadline=None)
@given(runs(), st.integers(0, 14))
def test_adding_any_new_incident_never_lowers_corr(records: list[Record], count: int) -> None:
    before = score_bundle(_bundle(records)).corr
    alert_ids = [r.alert_id for r in records if r.kind == "alert"][:count]
    assert score_bundle(_bundle([*records, report(900.0, "INC-NEW", alert_ids)])).corr >= before


@settings(max_examples=200, deadline=None)
@given(runs())
def test_the_score_is_always_within_0_and_100(records: list[Record]) -> None:
    card = score_bundle(_bundle(records))
    assert 0.0 <= card.marathon_score <= 100.0
    assert all(0.0 <= value <= 1.0 for value in (card.corr, card.loc, card.loc_strict, card.rep))
    assert card.risk is None or 0.0 <= card.risk <= 1.0
