"""The alerting state machine on its own: values in, transitions out, no Prometheus."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from orchestrator.telemetry.alerts import (
    AlertState,
    RuleEvaluationError,
    RuleState,
    Sample,
    Transition,
    alert_id,
    latest_records,
    record_of,
    step,
)
from orchestrator.telemetry.rules import AlertRule


def rule(
    *,
    for_seconds: float = 0.0,
    keep: float = 0.0,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> AlertRule:
    return AlertRule(
        name="Broken",
        group="g",
        expr="x > 0",
        interval=15.0,
        for_seconds=for_seconds,
        keep_firing_for=keep,
        labels=tuple(sorted((labels or {"severity": "critical"}).items())),
        annotations=tuple(sorted((annotations or {"summary": "{{ $labels.pod }} is {{ $value }}"}).items())),
        source="test.yaml",
    )


def sample(value: float = 1.0, **labels: str) -> Sample:
    return Sample(labels={"__name__": "x", "pod": "a", **labels}, value=value)


def run(r: AlertRule, vectors: Sequence[tuple[float, list[Sample]]]) -> tuple[RuleState, list[Transition]]:
    state = RuleState()
    seen: list[Transition] = []
    for at, vector in vectors:
        state, transitions = step(r, state, vector=vector, at=at)
        seen.extend(transitions)
    return state, seen


def kinds(transitions: list[Transition]) -> list[tuple[str, float]]:
    return [(t.kind, t.at) for t in transitions]


def test_an_alert_is_pending_until_for_has_elapsed_then_fires() -> None:
    _, seen = run(
        rule(for_seconds=30), [(0, [sample()]), (15, [sample()]), (30, [sample()]), (45, [sample()])]
    )
    assert kinds(seen) == [("pending", 0), ("firing", 30)]


def test_an_alert_without_for_fires_at_its_first_evaluation() -> None:
    state, seen = run(rule(), [(15, [sample()])])
    assert kinds(seen) == [("pending", 15), ("firing", 15)]
    assert [a.state for a in state.active.values()] == [AlertState.FIRING]


def test_a_pending_alert_whose_condition_clears_is_cancelled_and_never_recorded() -> None:
    state, seen = run(rule(for_seconds=60), [(0, [sample()]), (15, [sample()]), (30, [])])
    assert kinds(seen) == [("pending", 0), ("cancelled", 30)]
    assert state.active == {}
    assert [record_of(t) for t in seen] == [None, None]


def test_a_firing_alert_resolves_at_the_first_evaluation_without_its_series() -> None:
    _, seen = run(rule(), [(0, [sample()]), (15, [sample()]), (30, [])])
    assert kinds(seen) == [("pending", 0), ("firing", 0), ("resolved", 30)]
    firing, resolved = record_of(seen[1]), record_of(seen[2])
    assert firing is not None and resolved is not None
    assert (firing.state, firing.ends_at) == ("firing", None)
    assert (resolved.state, resolved.starts_at, resolved.ends_at) == ("resolved", 0, 30)
    assert firing.id == resolved.id


def test_keep_firing_for_holds_a_vanished_alert_then_resolves_it() -> None:
    vectors = [(0, [sample()]), (15, []), (30, []), (45, []), (60, [])]
    _, seen = run(rule(keep=45), vectors)
    assert kinds(seen) == [("pending", 0), ("firing", 0), ("resolved", 60)]


def test_keep_firing_for_restarts_when_the_condition_returns() -> None:
    vectors = [(0, [sample()]), (15, []), (30, [sample()]), (45, []), (60, []), (75, [])]
    _, seen = run(rule(keep=30), vectors)
    assert kinds(seen) == [("pending", 0), ("firing", 0), ("resolved", 75)]


def test_keep_firing_for_does_not_hold_a_pending_alert() -> None:
    _, seen = run(rule(for_seconds=60, keep=60), [(0, [sample()]), (15, [])])
    assert kinds(seen) == [("pending", 0), ("cancelled", 15)]


def test_a_re_fired_alert_gets_a_new_id_and_a_new_start() -> None:
    vectors = [(0, [sample()]), (15, []), (30, [sample()])]
    _, seen = run(rule(), vectors)
    records = [r for t in seen if (r := record_of(t)) is not None]
    assert [(r.state, r.starts_at) for r in records] == [("firing", 0), ("resolved", 0), ("firing", 30)]
    assert records[0].id == records[1].id != records[2].id


def test_each_label_set_is_its_own_alert() -> None:
    state, seen = run(rule(), [(0, [sample(pod="a"), sample(pod="b")]), (15, [sample(pod="b")])])
    assert [(t.kind, dict(t.alert.labels)["pod"]) for t in seen] == [
        ("pending", "a"),
        ("pending", "b"),
        ("firing", "a"),
        ("firing", "b"),
        ("resolved", "a"),
    ]
    assert [dict(labels)["pod"] for labels in state.active] == ["b"]


def test_labels_and_annotations_are_templated_and_the_metric_name_is_dropped() -> None:
    r = rule(
        labels={"severity": "warning", "owner": "{{ $labels.team }}", "empty": "{{ $labels.nope }}"},
        annotations={"summary": "{{ $labels.pod }} at {{ $value | humanizePercentage }}"},
    )
    _, seen = run(r, [(0, [sample(0.256, team="shop")])])
    alert = seen[-1].alert
    assert dict(alert.labels) == {
        "alertname": "Broken",
        "pod": "a",
        "team": "shop",
        "owner": "shop",
        "severity": "warning",
    }
    assert dict(alert.annotations) == {"summary": "a at 25.6%"}


def test_annotations_follow_the_latest_value_while_labels_stay() -> None:
    state, _ = run(rule(), [(0, [sample(1.0)]), (15, [sample(2.5)])])
    (alert,) = state.active.values()
    assert dict(alert.annotations)["summary"] == "a is 2.5"
    assert alert.value == 2.5 and alert.active_at == 0


def test_two_series_with_the_same_labels_after_templating_are_an_error() -> None:
    r = rule(labels={"pod": "fixed"})
    with pytest.raises(RuleEvaluationError, match="same labelset"):
        step(r, RuleState(), vector=[sample(pod="a"), sample(pod="b")], at=0)


def test_alert_ids_depend_on_rule_labels_and_start_only() -> None:
    labels = (("alertname", "Broken"), ("pod", "a"))
    assert alert_id("Broken", labels, starts_at=10.0) == alert_id(
        "Broken", tuple(reversed(labels)), starts_at=10.0
    )
    assert alert_id("Broken", labels, starts_at=10.0) != alert_id("Broken", labels, starts_at=25.0)
    assert alert_id("Broken", labels, starts_at=10.0) != alert_id("Other", labels, starts_at=10.0)


def test_the_latest_record_of_each_alert_replaces_its_earlier_ones() -> None:
    vectors = [(0, [sample(pod="a")]), (15, [sample(pod="a"), sample(pod="b")]), (30, [sample(pod="b")])]
    _, seen = run(rule(), vectors)
    history = [r for t in seen if (r := record_of(t)) is not None]
    assert [(r.labels["pod"], r.state) for r in history] == [
        ("a", "firing"),
        ("b", "firing"),
        ("a", "resolved"),
    ]
    assert [(r.labels["pod"], r.state) for r in latest_records(history)] == [
        ("a", "resolved"),
        ("b", "firing"),
    ]
