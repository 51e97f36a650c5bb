"""Alert records and the alerting state machine, modelled on Prometheus' rules package.

``step`` is the one function that moves alerts Inactive -> Pending -> Firing -> resolved for one rule at
one evaluation time, given the vector the rule's expression returned then. It has no side effects: the
evaluator feeds it what Prometheus answered and keeps what it returns.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.telemetry.rules import AlertRule
from orchestrator.telemetry.templates import TemplateError, render

LabelSet = tuple[tuple[str, str], ...]


class AlertState(StrEnum):
    PENDING = "pending"
    FIRING = "firing"


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels (``__name__`` included if present) and value."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class ActiveAlert:
    """An alert instance the rule currently holds (pending, or firing)."""

    labels: LabelSet
    annotations: LabelSet
    value: float
    state: AlertState
    active_at: float
    fired_at: float | None = None
    keep_firing_since: float | None = None


@dataclass(frozen=True)
class RuleState:
    """Everything one rule remembers between evaluations, keyed by the alert's full label set."""

    active: Mapping[LabelSet, ActiveAlert] = field(default_factory=dict)


TransitionKind = Literal["pending", "firing", "resolved", "cancelled"]


@dataclass(frozen=True)
class Transition:
    """An alert instance changed state at ``at``: became pending, started firing, resolved, or was a pending
    alert whose condition went away before ``for`` elapsed (cancelled)."""

    kind: TransitionKind
    rule: str
    at: float
    alert: ActiveAlert


class RuleEvaluationError(ValueError):
    """The rule's result cannot be turned into alerts (Prometheus marks such a rule unhealthy)."""


def step(
    rule: AlertRule, state: RuleState, *, vector: Sequence[Sample], at: float
) -> tuple[RuleState, list[Transition]]:
    """Evaluate ``rule`` at time ``at`` given the vector its expression returned (no side effects).

    Follows Prometheus' AlertingRule.Eval: a new label set starts Pending (reset if it was resolved), Pending
    turns Firing once ``for`` has elapsed since it became active, a vanished Firing alert stays Firing for
    ``keep_firing_for`` and then resolves, a vanished Pending alert is dropped. Raises
    ``RuleEvaluationError`` when two samples map to one label set, as Prometheus does.
    """
    current: dict[LabelSet, ActiveAlert] = {}
    for sample in vector:
        labels, annotations = _expand(rule, sample)
        if labels in current:
            raise RuleEvaluationError(
                f"rule {rule.name}: vector contains metrics with the same labelset after applying labels"
            )
        current[labels] = ActiveAlert(labels, annotations, sample.value, AlertState.PENDING, active_at=at)

    transitions: list[Transition] = []
    active: dict[LabelSet, ActiveAlert] = {}
    for labels, alert in state.active.items():
        fresh = current.get(labels)
        if fresh is not None:
            active[labels] = replace(
                alert, value=fresh.value, annotations=fresh.annotations, keep_firing_since=None
            )
            continue
        if alert.state is AlertState.PENDING:
            transitions.append(Transition("cancelled", rule.name, at, alert))
            continue
        since = alert.keep_firing_since if alert.keep_firing_since is not None else at
        if rule.keep_firing_for > 0 and at - since < rule.keep_firing_for:
            active[labels] = replace(alert, keep_firing_since=since)
            continue
        transitions.append(Transition("resolved", rule.name, at, alert))
    for labels, alert in current.items():
        if labels not in active:
            active[labels] = alert
            transitions.append(Transition("pending", rule.name, at, alert))

    for labels, alert in active.items():
        if alert.state is AlertState.PENDING and at - alert.active_at >= rule.for_seconds:
            fired = replace(alert, state=AlertState.FIRING, fired_at=at)
            active[labels] = fired
            transitions.append(Transition("firing", rule.name, at, fired))
    return RuleState(active=dict(sorted(active.items()))), transitions


def _expand(rule: AlertRule, sample: Sample) -> tuple[LabelSet, LabelSet]:
    series = {name: value for name, value in sample.labels.items() if name != "__name__"}
    try:
        labels = dict(series)
        for name, template in rule.labels:
            labels[name] = render(template, labels=series, value=sample.value)
        labels["alertname"] = rule.name
        annotations = tuple(
            sorted((k, render(t, labels=series, value=sample.value)) for k, t in rule.annotations)
        )
    except TemplateError as exc:
        raise RuleEvaluationError(f"rule {rule.name}: {exc}") from exc
    # Prometheus drops labels whose expanded value is empty.
    return tuple(sorted((k, v) for k, v in labels.items() if v != "")), annotations


class EvaluatedAlert(BaseModel):
    """One line of the append-only alert history: an alert started firing, or resolved.

    ``starts_at`` is when it started firing (``active_at`` when its condition first held), ``ends_at`` is
    null while it fires. The id depends only on rule, labels and ``starts_at``, so the firing and resolved
    records of one alert share it and a re-fire gets a new one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    rule: str
    state: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str]
    active_at: float
    starts_at: float
    ends_at: float | None
    value: float | None


def alert_id(rule: str, labels: LabelSet, *, starts_at: float) -> str:
    """A stable id: hash of the rule name, the sorted labels and the firing start (no side effects)."""
    payload = json.dumps([rule, sorted(labels), f"{starts_at:.3f}"], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def record_of(transition: Transition) -> EvaluatedAlert | None:
    """The history record a transition produces: firing and resolved ones do, pending ones do not."""
    alert = transition.alert
    if transition.kind not in ("firing", "resolved") or alert.fired_at is None:
        return None
    value = alert.value if math.isfinite(alert.value) else None
    return EvaluatedAlert(
        id=alert_id(transition.rule, alert.labels, starts_at=alert.fired_at),
        rule=transition.rule,
        state="firing" if transition.kind == "firing" else "resolved",
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        active_at=alert.active_at,
        starts_at=alert.fired_at,
        ends_at=transition.at if transition.kind == "resolved" else None,
        value=value,
    )


def latest_records(history: Sequence[EvaluatedAlert]) -> list[EvaluatedAlert]:
    """The last record of each alert in an append-only history, in the order the alerts first appeared:
    what an agent's alert view shows (no side effects)."""
    latest: dict[str, EvaluatedAlert] = {}
    for record in history:
        latest[record.id] = record
    return list(latest.values())
