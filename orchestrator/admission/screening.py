"""Admission of catalog entries on the twin: each entry alone on a fresh stepped twin under load, with its own
Prometheus, injected by the real injector and judged by ``orchestrator.admission.judging.judge``.

The timeline of one entry (simulated seconds): warm up; for a config fault a first injection and revert
(only the second observation counts); a five-minute window before injection; the injection and a five-minute
window after it; the revert, a recovery period, and a window in which the message must have stopped. The
alerts attributable to the entry are those that start from the injection to the revert plus the grace.

Until the timelines part (after the warm-up for a config fault, after the window before injection for the
others) every entry's twin goes the same way, so a worker moves a twin there once and screens each entry on
a copy of it (``orchestrator.admission.copies``): the twin is still fresh to the entry and the entry's alone.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from orchestrator.admission.copies import Copy, Stage, in_copy, quiet_stage, serve_copy, warm_stage
from orchestrator.admission.judging import judge
from orchestrator.admission.observing import EPOCH_S, ClusterReader, Window
from orchestrator.catalog.admissions import AdmissionFile, AdmissionRecord, Measurements, Procedure
from orchestrator.catalog.faults import ConfigFault, Entry
from orchestrator.catalog.loading import Catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.cluster.client import KubeClient
from orchestrator.cluster.fields import read_field
from orchestrator.errors import OrchestratorError, RevertError
from orchestrator.mechanisms.applying import Applier, InjectFailed
from orchestrator.mechanisms.handles import Context, Handle
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.mechanisms.registry import artifact_restored
from orchestrator.score.attribution import NAMESPACE_LABEL, names_service_in, normalise_name
from orchestrator.telemetry.alerts import EvaluatedAlert
from orchestrator.telemetry.observing import Observer
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import start_prometheus

SETTLE_S = 5.0


@dataclass(frozen=True)
class Settings:
    seed: int = 1
    warmup_s: float = 120.0
    window_s: float = 300.0
    recovery_s: float = 120.0
    clear_s: float = 120.0
    # Alerts that start up to this long after the revert are the entry's, as the scorer's grace (one
    # invocation interval, the runner's default delta) makes them; at most ``recovery_s``.
    grace_s: float = 120.0
    chunk_s: float = 60.0
    chaos_namespace: str = "chaos-mesh"

    def procedure(self, rule_pack: str) -> Procedure:
        return Procedure(
            seed=self.seed,
            warmup_s=self.warmup_s,
            window_s=self.window_s,
            recovery_s=self.recovery_s + self.clear_s,
            rule_pack=rule_pack,
        )


@dataclass(frozen=True)
class Job:
    """One entry to screen and what its judgement needs from the topology (picklable for the pool)."""

    entry: Entry
    app: str
    namespace: str
    entry_point: str
    scope: frozenset[str]
    direct: bool
    workdir: Path
    settings: Settings


def jobs_for(
    catalog: Catalog, *, ids: Iterable[str] | None, root: Path | None, workdir: Path, settings: Settings
) -> list[Job]:
    """A job per chosen entry of one app's catalog (no side effects)."""
    chosen = list(catalog.entries) if ids is None else [catalog.by_id[i] for i in ids]
    jobs = []
    for entry in chosen:
        topology = load_topology(entry.app, root=root)
        callers = {caller for caller, callee, _ in topology.edges() if callee == entry.target}
        jobs.append(
            Job(
                entry=entry,
                app=entry.app,
                namespace=topology.namespace,
                entry_point=topology.entry_point,
                scope=catalog.scope(entry),
                direct=entry.log.service == entry.target or entry.log.service in callers,
                workdir=workdir / entry.id,
                settings=settings,
            )
        )
    return jobs


def admit(jobs: list[Job], *, workers: int = 2) -> tuple[list[AdmissionRecord], dict[str, str]]:
    """Screen every job, ``workers`` at a time; returns the records and the entries that could not be run.

    Each worker is a fresh interpreter (no inherited threads or sockets, which its copies could not
    have): it warms its twins once and screens every entry in a copy of itself (``copies.in_copy``)."""
    records: list[AdmissionRecord] = []
    failures: dict[str, str] = {}
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
        outcomes = list(pool.map(_run, jobs))
    for job, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, str):
            failures[job.entry.id] = outcome
        else:
            records.append(outcome)
    return records, failures


# The stages a worker has warmed, by app, settings (the seed among them) and whether the window before
# injection is shared.
_stages: dict[tuple[str, Settings, bool], Stage] = {}


def _run(job: Job) -> AdmissionRecord | str:
    try:
        stage = stage_for(job)
    except OrchestratorError as exc:
        return f"{type(exc).__name__}: {exc}"
    return in_copy(lambda: _run_copy(job, stage))


def _run_copy(job: Job, stage: Stage) -> AdmissionRecord | str:
    try:
        return admit_entry(job, stage)
    except OrchestratorError as exc:
        return f"{type(exc).__name__}: {exc}"


def stage_for(job: Job) -> Stage:
    """The warm twin this process copies for the job, warmed on first use: a config fault's timeline parts
    from the others' after the warm-up (its first injection and revert come first), any other's after the
    window before injection."""
    settings = job.settings
    shared = not isinstance(job.entry, ConfigFault)
    key = (job.app, settings, shared)
    if key not in _stages:
        _stages[key] = (
            quiet_stage(
                job.app,
                seed=settings.seed,
                warmup_s=settings.warmup_s,
                chunk_s=settings.chunk_s,
                window_s=settings.window_s,
            )
            if shared
            else warm_stage(job.app, seed=settings.seed, warmup_s=settings.warmup_s, chunk_s=settings.chunk_s)
        )
    return _stages[key]


def admit_entry(job: Job, stage: Stage) -> AdmissionRecord:
    """Screen one entry on the stage's twin, served by this process with a Prometheus of its own; call it
    in a copy of the process that warmed the stage, which ends with the entry (the twin and its server
    thread are the entry's from here on). Side effects: starts the twin's server, starts and stops a
    Prometheus."""
    job.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=job.workdir) as scratch:
        prometheus = start_prometheus(Path(scratch))
        try:
            twin = serve_copy(
                stage, kubeconfig=job.workdir / "kubeconfig", remote_write_url=prometheus.remote_write_url
            )
            # The twin's server is left to end with the copy: stopping it drains connections for nothing.
            querier = PrometheusQuerier(prometheus.url)
            client = KubeClient.from_kubeconfig(twin.kubeconfig)
            try:
                return _screen(job, twin=twin, client=client, querier=querier, since=stage.since)
            finally:
                client.close()
                querier.close()
        finally:
            prometheus.stop()


def _screen(
    job: Job, *, twin: Copy, client: KubeClient, querier: PrometheusQuerier, since: float | None
) -> AdmissionRecord:
    """The entry's timeline from a warm twin; ``since`` is where the window before injection began when the
    twin has been through it."""
    entry, settings = job.entry, job.settings
    reader = ClusterReader(client=client, namespace=job.namespace)
    ctx = Context(
        client=client,
        namespace=job.namespace,
        chaos_namespace=settings.chaos_namespace,
        settle=lambda: _settle(twin),
    )
    book = Ledger(job.workdir / "faults.ledger.jsonl")
    book.open(
        Target(kubeconfig=str(twin.kubeconfig), namespace=job.namespace, chaos_namespace=ctx.chaos_namespace)
    )
    applier = Applier(ctx=ctx, ledger=book)
    try:
        if since is None:
            if isinstance(entry, ConfigFault):
                first = applier.inject(entry, fault_id=f"{entry.id}-first")
                if isinstance(first, InjectFailed):
                    return _rejected(entry, f"injection failed: {first.error}")
                applier.revert(first.handle.fault_id)
                twin.advance(settings.recovery_s)  # the before window starts from a recovered app
            since = twin.now
            twin.advance(settings.window_s)
        return _observe(job, twin=twin, reader=reader, applier=applier, querier=querier, since=since)
    except RevertError as exc:
        return _rejected(entry, f"revert failed: {exc}")
    finally:
        applier.revert_all()
        book.close()


def _observe(
    job: Job,
    *,
    twin: Copy,
    reader: ClusterReader,
    applier: Applier,
    querier: PrometheusQuerier,
    since: float,
) -> AdmissionRecord:
    """The windows before and after the injection, the revert and the recovery; the twin is at the end of
    the window before injection, which began at ``since``."""
    entry, settings = job.entry, job.settings
    t_b = since
    observer = Observer(
        querier=querier,
        rules=load_rule_pack(),
        namespace=job.namespace,
        entry_point=job.entry_point,
        origin_epoch_s=EPOCH_S,
        start_s=t_b,
    )
    t0 = twin.now
    before = Window(t_b, t0)
    message_before, _ = _message(reader, entry, before, now=t0)
    errors_before = reader.logs(job.scope, before, now=t0).errors()
    rate_before, failed_before = observer.entry_rates(at=t0, seconds=settings.window_s)
    restarts_before = reader.restart_counts(job.scope)

    injected = applier.inject(entry, fault_id=f"{entry.id}-admit")
    if isinstance(injected, InjectFailed):
        return _rejected(entry, f"injection failed: {injected.error}")
    handle = injected.handle
    deployed_ok = _deployed_ok(reader.client, handle) if isinstance(entry, ConfigFault) else None
    workload = _workload(entry)
    became_ready: bool | None = None
    while twin.now < t0 + settings.window_s - 1e-6:
        twin.advance(min(settings.chunk_s, t0 + settings.window_s - twin.now))
        if isinstance(entry, ConfigFault) and not became_ready:
            became_ready = workload not in reader.not_ready()
    t2 = twin.now
    after = Window(t0, t2)
    message_after, source = _message(reader, entry, after, now=t2)
    errors_after = reader.logs(job.scope, after, now=t2).errors()
    rate_after, failed_after = observer.entry_rates(at=t2, seconds=t2 - t0)
    restarts_after = reader.restart_counts(job.scope)
    restarts = sum(max(0, n - restarts_before.get(pod, 0)) for pod, n in restarts_after.items())

    try:
        applier.revert(handle.fault_id)
        restored_by_revert = True
    except RevertError:
        restored_by_revert = False
    twin.advance(settings.recovery_s)
    # The scorer's active window: an alert that starts from the injection to the revert plus the grace.
    until = min(twin.now, t2 + settings.grace_s)
    fired = attributable_rules(
        observer.alerts(until=until), job, injected_at=EPOCH_S + t0, window_end=EPOCH_S + until
    )
    restored = restored_by_revert and artifact_restored(reader.client, handle) is not False
    ready = not reader.not_ready()
    t4 = twin.advance(settings.clear_s)
    clear = Window(t4 - settings.clear_s, t4)
    still, _ = _message(reader, entry, clear, now=t4)
    rate_end, failed_end = observer.entry_rates(at=t4, seconds=settings.clear_s)
    found = Measurements(
        entry_rate_before=_r(rate_before),
        entry_rate_after=_r(rate_after),
        entry_failed_fraction_after=_r(failed_after / rate_after if rate_after > 0 else 0.0),
        server_errors_per_min_before=_r(failed_before * 60.0),
        server_errors_per_min=_r(failed_after * 60.0),
        error_logs_per_min_before=_r(errors_before / before.minutes),
        error_logs_per_min_after=_r(errors_after / after.minutes),
        restarts=restarts,
        message_before=message_before,
        message_after=message_after,
        message_source=source,
        deployed_value_ok=deployed_ok,
        became_ready=became_ready,
        restored=restored,
        ready_after_revert=ready,
        serving_after_revert=rate_end > 0 and failed_end / rate_end < 0.05,
        message_after_revert=still,
    )
    admitted, reasons = judge(entry, found, direct=job.direct, alerts=fired)
    return AdmissionRecord(
        id=entry.id,
        content_hash=entry.content_hash(),
        admitted=admitted,
        reasons=reasons,
        measurements=found,
        rules_fired=fired,
    )


def attributable_rules(
    alerts: Iterable[EvaluatedAlert], job: Job, *, injected_at: float, window_end: float
) -> tuple[str, ...]:
    """The rules with an alert attributable to the job's entry, sorted (no side effects): it started firing
    after the injection and by ``window_end`` (the revert plus the grace), in the entry's namespace, on a
    series naming a service of the entry's scope, as the scorer attributes alerts
    (``orchestrator.score.attribution``). Only this entry is injected in the admission twin, so nothing
    else explains such an alert."""
    scope = frozenset(normalise_name(service) for service in job.scope)
    return tuple(
        sorted(
            {
                alert.rule
                for alert in alerts
                if alert.state == "firing"
                and injected_at < alert.starts_at <= window_end
                and alert.labels.get(NAMESPACE_LABEL) == job.namespace
                and names_service_in(alert.labels, scope)
            }
        )
    )


def _settle(twin: Copy) -> None:
    twin.advance(SETTLE_S)


def _message(reader: ClusterReader, entry: Entry, window: Window, *, now: float) -> tuple[bool, str | None]:
    """Whether ``entry.log.message`` appears in the window: in a log line of its service, else in an event
    about that service's pods (a pod that never runs says why only in events)."""
    service = frozenset({entry.log.service})
    if reader.logs(service, window, now=now).contains(entry.log.message):
        return True, "log"
    if any(entry.log.message in text for text in reader.events(service, window)):
        return True, "event"
    return False, None


def _workload(entry: Entry) -> str:
    if isinstance(entry, ConfigFault) and entry.inject.object == "deployment":
        return entry.inject.name or entry.target
    return entry.target


def _deployed_ok(client: KubeClient, handle: Handle) -> bool:
    assert handle.field is not None
    now = read_field(client.read(handle.ref), field=handle.field, container=handle.container)
    return _text(now) == _text(handle.injected_value)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _r(value: float) -> float:
    return round(value, 3)


def _rejected(entry: Entry, reason: str) -> AdmissionRecord:
    return AdmissionRecord(
        id=entry.id, content_hash=entry.content_hash(), admitted=False, reasons=(reason,), measurements=None
    )


def admission_file(app: str, records: list[AdmissionRecord], *, settings: Settings) -> AdmissionFile:
    pack = load_rule_pack()
    return AdmissionFile(
        app=app,
        procedure=settings.procedure(pack.version),
        entries=tuple(sorted(records, key=lambda r: r.id)),
    )
