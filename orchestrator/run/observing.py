"""Turning what Prometheus and the cluster say into journal records at a boundary: the alert history, the
rule evaluations that failed, the entry point's service samples, each live fault's probe and artifact
samples; and the agent's inbox. At the run's end, each rule's health.

What Prometheus says is read by the shared ``orchestrator.telemetry.observing.Observer``; the recorder here
keeps the runner's positions in it and writes the bundle's records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from orchestrator.bundle.records import (
    AlertRecord,
    ArtifactSample,
    ProbeSample,
    Record,
    RuleFailed,
    RuleHealth,
    ServiceSample,
)
from orchestrator.catalog.faults import SymptomProbe
from orchestrator.cluster.client import KubeClient, NotFound
from orchestrator.errors import ClusterError
from orchestrator.mechanisms.handles import Handle
from orchestrator.mechanisms.registry import artifact_restored
from orchestrator.run.events import Alert, RunEventHandler
from orchestrator.run.faults import LiveFault
from orchestrator.telemetry.alerts import EvaluatedAlert
from orchestrator.telemetry.evaluating import RuleFailure
from orchestrator.telemetry.observing import Observer
from orchestrator.telemetry.probes import HealthyWhen, ProbeQuery

PROBE_WORKERS = 4
T = TypeVar("T")
# One probe to sample: the fault, the time of its last sample, its query, and the time to sample it up to.
ProbeSpan = tuple[str, float, ProbeQuery, float]


def bundle_alert(alert: EvaluatedAlert, *, origin_epoch_s: float) -> AlertRecord:
    """An evaluated alert state in schedule time, as the bundle keeps it (no side effects)."""
    return AlertRecord(
        alert_id=alert.id,
        rule=alert.rule,
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        starts_at=round(alert.starts_at - origin_epoch_s, 3),
        ends_at=None if alert.ends_at is None else round(alert.ends_at - origin_epoch_s, 3),
    )


def bundle_rule_failure(failure: RuleFailure, *, origin_epoch_s: float) -> RuleFailed:
    """A failed evaluation window in schedule time, as the bundle keeps it (no side effects)."""
    return RuleFailed(
        rule=failure.rule, group=failure.group, t=round(failure.at - origin_epoch_s, 3), error=failure.message
    )


def compact_json(value: Any) -> str:
    """``value`` as the run's agent files hold it: keys sorted, no spaces (no side effects). Compact, so
    that the C encoder, which an indented dump cannot use, does the work."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def write_json_atomically(path: Path, value: Any) -> None:
    """Replace ``path`` in one step, so an agent never reads half a file."""
    write_text_atomically(path, compact_json(value))


def write_text_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` and a newline in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    os.replace(temporary, path)


def inbox_entry(record: AlertRecord) -> dict[str, Any]:
    """One alert state as the inbox lists it: the bundle record's fields (no side effects).

    The inbox is the list of every state so far, in order; the latest entry per ``alert_id`` is its truth."""
    return record.model_dump(mode="json", exclude={"v", "kind"})


def probe_of(probe: SymptomProbe, namespace: str) -> ProbeQuery:
    """The catalog's probe with ``$namespace`` substituted, as the telemetry probe model (no side effects)."""
    return ProbeQuery(
        query=probe.query.replace("$namespace", namespace),
        healthy=HealthyWhen(op=probe.healthy.op, value=probe.healthy.value),
    )


def artifact_sample(client: KubeClient, handle: Handle, *, t: float) -> ArtifactSample | None:
    """Whether a fault's artifact holds its pre-injection value again, read from the cluster; None when there
    is nothing to compare or the read failed (no observation rather than a wrong one)."""
    try:
        restored = artifact_restored(client, handle)
    except NotFound:
        restored = False  # the object itself is gone: its setting is certainly not as it was
    except ClusterError:
        return None
    if restored is None:
        return None
    return ArtifactSample(fault_id=handle.fault_id, t=t, restored=restored)


@dataclass
class Observation:
    """Queries under way for one boundary (see ``Recorder.start``)."""

    until: float
    pool: ThreadPoolExecutor
    probes: Future[list[tuple[ProbeSpan, list[ProbeSample]]]]
    alerts: Future[list[AlertRecord]]
    service: Future[list[ServiceSample]]
    settled: bool = False  # its queries are over: journaled, or abandoned after a failure


@dataclass
class Recorder:
    """Keeps the alert history and each live fault's sampling position; appends records through ``record``.

    Side effects: Prometheus queries (through ``observer``), cluster reads, journal records.
    """

    observer: Observer
    client: KubeClient
    record: Callable[[Record], object]
    events: RunEventHandler
    history: list[AlertRecord] = field(default_factory=list)
    # Each state of ``history`` in the inbox's form, encoded once: the inbox is rewritten at every invocation.
    _inbox_texts: list[str] = field(default_factory=list)
    firing: dict[str, AlertRecord] = field(default_factory=dict)
    service_until: float = 0.0
    _probe_until: dict[str, float] = field(default_factory=dict)
    _probes: dict[str, ProbeQuery] = field(default_factory=dict)
    _deferred: list[ProbeSpan] = field(default_factory=list)  # of faults reverted since the last boundary
    _rule_failures_journaled: int = 0

    def observe(self, faults: Sequence[LiveFault], *, until: float) -> None:
        """Everything Prometheus says up to schedule time ``until``, journaled."""
        self.commit(self.start(faults, until=until))

    def start(
        self, faults: Sequence[LiveFault], *, until: float, ready: Callable[[], None] | None = None
    ) -> Observation:
        """Launch the queries of everything Prometheus says up to schedule time ``until`` in the background,
        once ``ready`` (a wait until Prometheus has the series up to ``until``) has returned: the rule
        pack's alerts first, which the agent's invocation waits for, then the live faults' probes and the
        entry point's samples side by side, which only the score reads.

        The caller may change the world meanwhile (inject, revert, let the agent act, move it on): the
        queries end at ``until``, which the world has passed, so what they answer cannot change.
        ``commit_alerts`` then ``commit_samples`` (or ``commit``, both) write the records, each stream in
        a fixed order, the probes deferred since the last observation (``defer_probes``) first.
        """
        spans, self._deferred = [*self._deferred, *self._spans(faults, until)], []
        pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="observe")
        # Submitted first, the wait has a worker of its own; each query waits for it, and fails with it.
        arrived = pool.submit(ready or (lambda: None))

        def after_arrival(query: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                arrived.result()
                return query()

            return run

        alerts = pool.submit(after_arrival(lambda: self._evaluate(until)))

        def after_alerts(query: Callable[[], T]) -> Callable[[], T]:
            # Started once the alerts are answered (or failed): Prometheus then spends both cores on the
            # queries the agent waits for, and these overlap the invocation instead.
            def run() -> T:
                wait([alerts])
                arrived.result()
                return query()

            return run

        after = self.service_until
        return Observation(
            until=until,
            pool=pool,
            probes=pool.submit(after_alerts(lambda: self._sample_probes(spans))),
            alerts=alerts,
            service=pool.submit(after_alerts(lambda: self._sample_service(after=after, until=until))),
        )

    def commit(self, observation: Observation) -> None:
        """Wait for an observation and journal all of it (``commit_alerts``, then ``commit_samples``)."""
        self.commit_alerts(observation)
        self.commit_samples(observation)

    def commit_alerts(self, observation: Observation) -> None:
        """Wait for an observation's alerts and journal them with the rule evaluations that failed; the
        probes and the entry point's samples go on in the background. Should they fail, the rest of the
        observation is abandoned (``commit_samples`` then does nothing)."""
        try:
            alert_answers = observation.alerts.result()
        except BaseException:
            observation.settled = True
            observation.pool.shutdown(wait=True, cancel_futures=True)
            raise
        self._commit_alerts(alert_answers)
        self._commit_rule_failures()

    def commit_samples(self, observation: Observation) -> None:
        """Wait for the rest of an observation whose alerts are committed, and journal it: the probes, then
        the entry point's samples. Records of other streams may have been written since the alerts; the
        probe stream's must not have been (artifact samples come after these probes)."""
        if observation.settled:
            return
        observation.settled = True
        try:
            probe_answers = observation.probes.result()
            service_answers = observation.service.result()
        finally:
            observation.pool.shutdown(wait=True, cancel_futures=True)
        self._commit_probes(probe_answers)
        for sample in service_answers:
            self.record(sample)
        self.service_until = max(self.service_until, observation.until)

    def defer_probes(self, faults: Sequence[LiveFault], *, until: float) -> None:
        """Sample the probes of ``faults`` up to schedule time ``until`` with the next observation, before its
        own: what a fault about to be reverted between boundaries showed until then. Prometheus' answer for
        times up to ``until`` does not change once the world has passed it, so the query waits for the next
        boundary's push of the series instead of one of its own; the records are the same, in the same
        order. A fault that stays live (its revert failed) is sampled from ``until`` on."""
        spans = self._spans(faults, until)
        self._deferred.extend(spans)
        for fault_id, after, _, _ in spans:
            self._probe_until[fault_id] = max(after, until)

    @property
    def deferred(self) -> bool:
        """Whether probes wait for the next observation."""
        return bool(self._deferred)

    def commit_deferred(self) -> None:
        """Sample and journal the deferred probes now (a run ending without a last observation)."""
        spans, self._deferred = self._deferred, []
        self._commit_probes(self._sample_probes(spans))

    def _spans(self, faults: Sequence[LiveFault], until: float) -> list[ProbeSpan]:
        """Each fault's probe from the time of its last sample up to ``until``."""
        return [
            (
                fault.fault_id,
                self._probe_until.get(fault.fault_id, fault.inject_s),
                self._probes[fault.fault_id],
                until,
            )
            for fault in faults
        ]

    def _commit_probes(self, answers: list[tuple[ProbeSpan, list[ProbeSample]]]) -> None:
        for (fault_id, after, _, until), samples in answers:
            for one in samples:
                self.record(one)
            if fault_id in self._probes:  # not ended meanwhile
                self._probe_until[fault_id] = max(after, until)

    def _evaluate(self, until: float) -> list[AlertRecord]:
        return [
            bundle_alert(alert, origin_epoch_s=self.observer.origin_epoch_s)
            for alert in self.observer.alerts(until=until)
        ]

    def _sample_service(self, *, after: float, until: float) -> list[ServiceSample]:
        return [
            ServiceSample(t=sample.at, q=sample.q, e=sample.e, l=sample.l)
            for sample in self.observer.service(after=after, until=until)
        ]

    def _commit_alerts(self, added: list[AlertRecord]) -> None:
        for alert in added:
            self.record(alert)
            self.history.append(alert)
            self._inbox_texts.append(compact_json(inbox_entry(alert)))
            if alert.ends_at is None:
                self.firing[alert.alert_id] = alert
            else:
                self.firing.pop(alert.alert_id, None)
            self.events.handle(
                Alert(
                    alert_id=alert.alert_id, rule=alert.rule,
                    state="firing" if alert.ends_at is None else "resolved",
                    service=alert.labels.get("service", ""),
                    t=alert.starts_at if alert.ends_at is None else alert.ends_at,
                )
            )  # fmt: skip

    def inbox_text(self) -> str:
        """The inbox file's text: ``compact_json`` of every state of ``history`` in the inbox's form, from the
        entries encoded as they came (no side effects)."""
        return "[" + ",".join(self._inbox_texts) + "]"

    def _commit_rule_failures(self) -> None:
        """The evaluation windows that failed since the last commit (no evaluation is under way now)."""
        failures = self.observer.evaluator.failures
        for failure in failures[self._rule_failures_journaled :]:
            self.record(bundle_rule_failure(failure, origin_epoch_s=self.observer.origin_epoch_s))
        self._rule_failures_journaled = len(failures)

    def commit_rule_health(self) -> None:
        """Every rule's evaluations and failures over the run, once at its end, after any failure not yet
        journaled (an observation that broke off), so that the summary and the failures agree."""
        self._commit_rule_failures()
        for health in self.observer.evaluator.health():
            self.record(
                RuleHealth(
                    rule=health.rule, group=health.group, evaluations=health.evaluations,
                    failures=health.failures,
                )
            )  # fmt: skip

    def start_fault(self, fault: LiveFault) -> None:
        self._probe_until[fault.fault_id] = fault.inject_s
        self._probes[fault.fault_id] = probe_of(fault.entry.probe, self.observer.namespace)

    def _sample_probes(self, spans: Sequence[ProbeSpan]) -> list[tuple[ProbeSpan, list[ProbeSample]]]:
        """Probe samples of each span's fault on the grid since its last sample, up to the span's end."""

        def sample(span: ProbeSpan) -> list[ProbeSample]:
            fault_id, after, probe, until = span
            return [
                ProbeSample(fault_id=fault_id, t=result.at, value=result.value, healthy=result.healthy)
                for result in self.observer.probe(probe, after=after, until=until)
            ]

        with ThreadPoolExecutor(max_workers=PROBE_WORKERS) as pool:
            answers = list(pool.map(sample, spans))
        return list(zip(spans, answers, strict=True))

    def artifacts(self, faults: Sequence[LiveFault], *, t: float) -> None:
        for fault in faults:
            sample = artifact_sample(self.client, fault.handle, t=t)
            if sample is not None:
                self.record(sample)

    def end_fault(self, fault_id: str) -> None:
        self._probe_until.pop(fault_id, None)
        self._probes.pop(fault_id, None)


def oracle_truth(
    faults: Sequence[LiveFault], *, now_s: float, grace_s: float, namespace: str
) -> dict[str, Any]:
    """Ground truth of the live faults for the test-only oracle agent (no side effects)."""
    return {
        "now_s": now_s,
        "grace_s": grace_s,
        "namespace": namespace,
        "faults": [
            {
                "fault_id": fault.fault_id,
                "catalog_id": fault.entry.id,
                "namespace": namespace,
                "category": str(fault.entry.category),
                "mechanism": str(fault.entry.mechanism),
                "target": fault.entry.target,
                "culprits": sorted(fault.entry.culprits),
                "artifact": fault.handle.artifact or fault.entry.artifact,
                "scope": list(fault.scope),
                "inject_s": fault.inject_s,
                "planned_revert_s": fault.activation.end_s,
                "remedy": fault.entry.remedy.model_dump(mode="json"),
                "one_shot": fault.entry.heals_by_itself,
            }
            for fault in faults
        ],
    }
