"""The rule-pack evaluator: at each schedule boundary, one range query per rule over the time since the last
boundary, then Prometheus' alerting semantics (``alerts.step``) at every evaluation time in between.

Evaluation times are multiples of the group's interval counted from time 0, so they do not depend on when
boundaries fall. A rule whose query fails is recorded and retried over the longer span at the next boundary;
the other rules go on (Prometheus marks such a rule unhealthy and the group continues). Each rule counts its
evaluation windows (one range query each) and the windows that failed: its health.

A range query costs Prometheus about the same whatever its number of steps (selecting and reading the
series is most of it), so a window is one query, and the workers take the rules that were slowest at the
last window first: a long query that starts last runs alone while the other workers wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from orchestrator.errors import QueryRejected, TelemetryError
from orchestrator.telemetry.alerts import (
    ActiveAlert,
    EvaluatedAlert,
    RuleEvaluationError,
    RuleState,
    Sample,
    Transition,
    record_of,
    step,
)
from orchestrator.telemetry.querying import Querier, RangeSeries
from orchestrator.telemetry.rules import AlertRule, RulePack


@dataclass(frozen=True)
class RuleFailure:
    """One evaluation window of a rule failed: its query failed (``at`` is the window's last evaluation
    time), or its result was not a valid alert vector (``at`` is the first time in it where it was not)."""

    rule: str
    group: str
    at: float
    message: str


@dataclass(frozen=True)
class RuleTally:
    """How many evaluation windows of one rule there were so far, and how many of them failed."""

    rule: str
    group: str
    evaluations: int
    failures: int


def evaluation_times(*, after: float, until: float, interval: float) -> list[float]:
    """Multiples of ``interval`` (from time 0) in (after, until], computed in whole milliseconds so that
    float rounding never adds or drops one (no side effects)."""
    step_ms = round(interval * 1000)
    if step_ms <= 0:
        raise ValueError(f"evaluation interval must be positive, got {interval}")
    first = round(after * 1000) // step_ms + 1
    last = round(until * 1000) // step_ms
    return [k * step_ms / 1000 for k in range(first, last + 1)]


def vectors_by_time(series: Sequence[RangeSeries], times: Sequence[float]) -> list[list[Sample]]:
    """Regroup a range-query matrix into the instant vector at each of ``times`` (no side effects)."""
    index = {round(t * 1000): i for i, t in enumerate(times)}
    vectors: list[list[Sample]] = [[] for _ in times]
    for one in series:
        for t, value in one.points:
            slot = index.get(round(t * 1000))
            if slot is not None:
                vectors[slot].append(Sample(labels=one.labels, value=value))
    return vectors


class AlertEvaluator:
    """Evaluates every rule of a pack against Prometheus and keeps the append-only alert history.

    Side effects: Prometheus queries only. Call ``evaluate(until=t)`` at each boundary, with t increasing.
    """

    def __init__(
        self,
        pack: RulePack,
        querier: Querier,
        *,
        start: float,
        workers: int = 4,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.pack = pack
        self._querier = querier
        self._workers = max(1, workers)
        self._evaluated_until = [start] * len(pack.rules)
        self._states = [RuleState() for _ in pack.rules]
        self._windows = [0] * len(pack.rules)
        self._failed_windows = [0] * len(pack.rules)
        # Seconds (on ``clock``) of each rule's last query: a runtime fact that only orders the submissions.
        self._clock = clock
        self._took = [0.0] * len(pack.rules)
        self._history: list[EvaluatedAlert] = []
        self.transitions: list[Transition] = []
        self.failures: list[RuleFailure] = []  # one per failed window, in the order they were evaluated

    @property
    def history(self) -> list[EvaluatedAlert]:
        """Every record so far, in the order they happened."""
        return list(self._history)

    def active(self) -> list[tuple[str, ActiveAlert]]:
        """The alert instances held now, pending or firing, as (rule name, alert)."""
        return [
            (rule.name, alert)
            for rule, state in zip(self.pack.rules, self._states, strict=True)
            for alert in state.active.values()
        ]

    def health(self) -> list[RuleTally]:
        """Every rule's windows and failed windows so far, in the pack's order."""
        counts = zip(self.pack.rules, self._windows, self._failed_windows, strict=True)
        return [
            RuleTally(rule=rule.name, group=rule.group, evaluations=windows, failures=failed)
            for rule, windows, failed in counts
        ]

    def evaluate(self, *, until: float) -> list[EvaluatedAlert]:
        """Evaluate every rule at each of its evaluation times since the previous call, up to ``until``;
        return the records this adds to the history (alerts that started firing or resolved)."""
        jobs = []
        for i, rule in enumerate(self.pack.rules):
            times = evaluation_times(after=self._evaluated_until[i], until=until, interval=rule.interval)
            if times:
                jobs.append((i, rule, times))
        # The slowest queries of the last window go first, so that none of them starts last and runs alone
        # while the other workers idle; the answers are taken in the pack's order whatever the order.
        slowest_first = sorted(range(len(jobs)), key=lambda n: -self._took[jobs[n][0]])
        with ThreadPoolExecutor(max_workers=self._workers) as pool:
            futures = {n: pool.submit(self._timed_query, *jobs[n]) for n in slowest_first}
            answers = [futures[n].result() for n in range(len(jobs))]
        added: list[tuple[float, int, Transition]] = []
        for (i, rule, times), answer in zip(jobs, answers, strict=True):
            self._windows[i] += 1
            if isinstance(answer, RuleFailure):
                self._failed(i, answer)
                continue
            failure: RuleFailure | None = None
            for at, vector in zip(times, vectors_by_time(answer, times), strict=True):
                try:
                    self._states[i], transitions = step(rule, self._states[i], vector=vector, at=at)
                except RuleEvaluationError as exc:
                    failure = failure or RuleFailure(rule.name, rule.group, at, str(exc))
                    continue
                added.extend((at, i, transition) for transition in transitions)
            if failure is not None:
                self._failed(i, failure)
            self._evaluated_until[i] = times[-1]
        added.sort(key=lambda item: (item[0], item[1], item[2].alert.labels))
        self.transitions.extend(transition for _, _, transition in added)
        records = [record for _, _, t in added if (record := record_of(t)) is not None]
        self._history.extend(records)
        return records

    def _failed(self, i: int, failure: RuleFailure) -> None:
        self._failed_windows[i] += 1
        self.failures.append(failure)

    def _timed_query(self, i: int, rule: AlertRule, times: list[float]) -> list[RangeSeries] | RuleFailure:
        began = self._clock()
        try:
            return self._query(rule, times)
        finally:
            self._took[i] = self._clock() - began

    def _query(self, rule: AlertRule, times: list[float]) -> list[RangeSeries] | RuleFailure:
        try:
            return self._querier.range(rule.expr, start=times[0], end=times[-1], step=rule.interval)
        except QueryRejected as exc:  # what the server said, not where it listens: equal runs, equal words
            message = f"Prometheus rejected the query: {exc.answer}"
            return RuleFailure(rule.name, rule.group, times[-1], message)
        except TelemetryError as exc:
            return RuleFailure(rule.name, rule.group, times[-1], str(exc))
