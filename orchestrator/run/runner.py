"""``run_marathon``: validate, plan, start the world, run the boundary loop, revert, seal, verify, score.

Reverts are guaranteed: the loop runs under ``try/finally``, SIGINT and SIGTERM ask it to stop (a second
signal interrupts at once; the ``finally`` still reverts and seals), and the revert ledger on disk lets
``marathon recover`` finish the job after a ``kill -9``.
"""

from __future__ import annotations

import gc
import platform
import resource
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from orchestrator.cluster.client import KubeClient
from orchestrator.errors import ClusterError, ConfigError, OrchestratorError, Problem, TelemetryError
from orchestrator.run import sandbox
from orchestrator.run.baseline import BaselineJob, start_baseline
from orchestrator.run.config import RunConfig, agent_command, run_identity
from orchestrator.run.events import Failed, Identified, Ignore, Phase, RunEventHandler
from orchestrator.run.finishing import BUNDLE_DIR, Scored, seal, seal_and_score
from orchestrator.run.plan import RunPlan, make_plan
from orchestrator.run.setup import open_session
from orchestrator.telemetry.server import connect_prometheus, prometheus_binary
from orchestrator.vocabulary.chaos import CHAOS_GROUP, CHAOS_VERSION

# A twin holds many long-lived objects (the object store, sampled traces, log lines) and a run makes little
# cyclic garbage: at the default thresholds the collector traversed all of them every few simulated minutes,
# a fifth of the twin's CPU. Collections stay, fewer of them.
GC_THRESHOLDS = (10_000, 20, 20)


@dataclass(frozen=True)
class RunResult:
    run_id: str
    bundle_dir: Path
    score: dict[str, Any]
    run_dir: Path = Path()
    score_text: str = ""
    reason: str = "completed"
    wall_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)


def identity_of(config: RunConfig, *, command: list[str], plan: RunPlan) -> str:
    """The id the caller gave the run, else the one its inputs derive (wall time included where the run
    cannot repeat)."""
    if config.run_id is not None:
        return config.run_id
    unique = "" if config.reproducible else datetime.now(UTC).isoformat()
    return run_identity(
        config,
        versions=plan.versions,
        command=command,
        schedule_hash=plan.schedule.content_hash,
        unique=unique,
    )


def preflight(config: RunConfig) -> list[str]:
    """Everything that can be checked before anything starts; the agent's command line."""
    command = agent_command(config)
    if command and config.sandboxed:
        with tempfile.TemporaryDirectory(prefix="marathon-sandbox-probe-") as scratch:
            sandbox.probe(Path(scratch))
    if config.backend == "twin":
        try:
            prometheus_binary()
        except TelemetryError as exc:
            raise ConfigError(
                "cannot run on the twin", [Problem("run configuration", None, "backend", "twin", str(exc))]
            ) from None
    else:
        _reach_cluster(config)
    return command


def _reach_cluster(config: RunConfig) -> None:
    """A real cluster's run starts only if its kubeconfig loads, its API server answers and its Prometheus
    is ready: checked before the run directory exists, so a run that cannot start writes nothing."""
    assert config.kubeconfig is not None and config.prometheus_url is not None

    def refuse(field: str, value: str, why: str) -> ConfigError:
        problem = Problem("run configuration", None, field, value, why)
        return ConfigError("cannot run on the cluster", [problem])

    try:
        client = KubeClient.from_kubeconfig(config.kubeconfig)
    except ClusterError as exc:
        why = str(exc).removeprefix(f"{config.kubeconfig}: ")
        raise refuse("kubeconfig", str(config.kubeconfig), why) from None
    try:
        client.system_uid(timeout_s=10.0)
        chaos_mesh = client.serves(CHAOS_GROUP, CHAOS_VERSION)
    except ClusterError as exc:
        raise refuse("kubeconfig", str(config.kubeconfig), f"{client.server}: {exc}") from None
    finally:
        client.close()
    if not chaos_mesh:
        why = f"{client.server} does not serve {CHAOS_GROUP}/{CHAOS_VERSION}: install Chaos Mesh first"
        raise refuse("kubeconfig", str(config.kubeconfig), why)
    try:
        connect_prometheus(config.prometheus_url, ready_timeout=10.0)
    except TelemetryError as exc:
        raise refuse("prometheus_url", config.prometheus_url, str(exc)) from None


def run_dir_for(config: RunConfig, run_id: str) -> Path:
    """``--out`` when given (it must be new or empty), else ``<runs>/<run_id>`` or the first free
    ``<runs>/<run_id>-N`` when an earlier run of the same id is kept there."""
    if config.out is not None:
        if config.out.exists() and any(config.out.iterdir()):
            raise ConfigError(
                "the output directory is not empty",
                [Problem("run configuration", None, "out", str(config.out), "exists and holds files")],
            )
        return config.out
    candidate = config.runs_root / run_id
    number = 2
    while candidate.exists():
        candidate = config.runs_root / f"{run_id}-{number}"
        number += 1
    return candidate


@contextmanager
def collecting_less() -> Iterator[None]:
    """``GC_THRESHOLDS`` for the block: the cyclic collector runs less often (nothing else changes)."""
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (a clean early end); a second one interrupts at once. Only the main thread
    may install handlers: elsewhere (the control plane's worker threads) ``stop`` is the caller's."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    # A signal the embedding process chose to ignore (a control plane's worker ignores the terminal's
    # Ctrl-C and is stopped through ``stop``) stays ignored.
    watched = [sig for sig in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(sig) is not signal.SIG_IGN]
    previous = {sig: signal.signal(sig, handler) for sig in watched}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_marathon(
    config: RunConfig,
    *,
    events: RunEventHandler | None = None,
    stop: threading.Event | None = None,
) -> RunResult:
    """Run one marathon end to end and return its id, sealed bundle and score (docs/metrics.md JSON);
    ``events`` follows it as it goes."""
    # The whole run collects less: by the scoring, the twin's objects are still in memory, and reading the
    # bundle at the default thresholds made the collector traverse them all, ten times the reading itself.
    with collecting_less():
        return _run_marathon(config, events=events, stop=stop)


def _run_marathon(
    config: RunConfig, *, events: RunEventHandler | None, stop: threading.Event | None
) -> RunResult:
    began = time.monotonic()
    events = events or Ignore()
    stop = stop or threading.Event()
    command = preflight(config)
    plan = make_plan(config)
    run_id = identity_of(config, command=command, plan=plan)
    run_dir = run_dir_for(config, run_id).resolve()  # the run's servers work in their own directories
    events.handle(Identified(run_id=run_id, run_dir=str(run_dir)))
    job = _baseline(config, plan)
    events.handle(Phase("starting the twin" if config.backend == "twin" else "connecting to the cluster"))
    try:
        reason, phases, invocations = _drive(
            config, plan, run_id=run_id, run_dir=run_dir, command=command, events=events, stop=stop,
            began=began,
        )  # fmt: skip
    except BaseException:
        if job is not None:
            job.cancel()
        _seal_what_was_written(run_dir)
        raise
    baseline = None
    events.handle(Phase("sealing the bundle"))
    try:
        seal(run_dir)  # the record is safe before the baseline is waited for
    except BaseException:
        if job is not None:
            job.cancel()
        raise
    try:
        if job is not None and reason != "completed":
            job.cancel()  # a run cut short is not comparable with a whole no-action run
        elif job is not None:
            events.handle(Phase("waiting for the no-action baseline"))
            baseline = job.result()
    except OrchestratorError as exc:  # the run itself is whole: score it without the degradation level
        print(f"marathon: no degradation baseline: {exc}", file=sys.stderr)
        events.handle(Failed(operation="baseline", error=str(exc)))
    except BaseException:
        if job is not None:
            job.cancel()
        raise
    events.handle(Phase("scoring"))
    scored: Scored = seal_and_score(run_dir, scored=config.role == "scored", baseline=baseline)
    return RunResult(
        run_id=run_id,
        bundle_dir=scored.bundle,
        score=scored.score,
        run_dir=run_dir,
        score_text=scored.text,
        reason=reason,
        wall_s=time.monotonic() - began,
        phases={**phases, "invocations": float(invocations)},
    )


def _cpu_seconds() -> dict[str, float]:
    """CPU seconds of this process (the twin, the evaluator, the tool server) and of its reaped children
    (agent invocations) so far: where a run's time goes when the machine is shared."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "runner": round(own.ru_utime + own.ru_stime, 3),
        "children": round(children.ru_utime + children.ru_stime, 3),
    }


def _peak_rss_mb() -> float:
    """Peak resident memory in MB of this process (the twin, the evaluator, the tool server) so far."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _seal_what_was_written(run_dir: Path) -> None:
    """A run that failed still leaves a sealed, verifiable record of what happened until then."""
    if (run_dir / BUNDLE_DIR / "run.jsonl").is_file():
        try:
            seal(run_dir)
        except OrchestratorError as exc:
            print(f"marathon: the journal of the failed run could not be sealed: {exc}", file=sys.stderr)


def _baseline(config: RunConfig, plan: RunPlan) -> BaselineJob | None:
    if not config.against_baseline:
        return None
    return start_baseline(config, plan)


def _drive(
    config: RunConfig,
    plan: RunPlan,
    *,
    run_id: str,
    run_dir: Path,
    command: list[str],
    events: RunEventHandler,
    stop: threading.Event,
    began: float,
) -> tuple[str, dict[str, float], int]:
    """Start everything, loop, and always revert, end and close.

    Returns (why it ended, wall seconds per phase, invocations made)."""
    started_at = datetime.now(UTC).isoformat()  # a runtime fact for runtime.json only
    with (
        stop_on_signals(stop),
        open_session(
            config,
            plan,
            run_id=run_id,
            run_dir=run_dir,
            command=command,
            events=events,
            stop=stop,
        ) as session,
    ):
        reason = "error"
        left: list[str] = []
        try:
            reason = session.run()
        except KeyboardInterrupt:
            reason = "interrupted"
            raise
        finally:
            try:
                left = session.finish(reason)
            finally:
                session.journal.write_runtime(
                    {
                        "started_at": started_at,
                        "wall_s": round(time.monotonic() - began, 3),
                        "cpu_s": _cpu_seconds(),
                        "peak_rss_mb": _peak_rss_mb(),
                        "phases_s": {key: round(value, 3) for key, value in sorted(session.wall.items())},
                        "host": platform.node(),
                        "python": sys.version.split()[0],
                        "reason": reason,
                        "unreverted": left,
                    }
                )
        if left:
            raise OrchestratorError(
                "some faults could not be reverted; the cluster still holds them:\n  " + "\n  ".join(left)
            )
        return reason, dict(session.wall), session.invocations
