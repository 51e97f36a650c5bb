"""Nightly benchmarks: a matrix of apps x agents x seeds from ``deploy/nightly.yaml``, run with a bounded
number of marathons at once, results in the run registry (and so on the leaderboard).

Each execution of the matrix is one *night*, named by the UTC time it started; its runs carry the source
``nightly <night>`` in the registry, which is how ``GET /nightly`` groups them. The schedule is APScheduler
3's cron trigger with its SQLAlchemy job store in the registry's database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.api.models import RunRequest, ScheduleOverrides
from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import RunRow, TargetBusy
from orchestrator.api.runs import RunManager, TooManyRuns
from orchestrator.bundle.seal import is_sealed
from orchestrator.errors import ConfigError, Problem
from orchestrator.run.finishing import BUNDLE_DIR

JOB_ID = "nightly-matrix"
JOB_TABLE = "nightly_jobs"  # ``marathon serve``'s job store
# ``marathon nightly``'s own: schedulers sharing a job store would each fire the other's job too.
FOREGROUND_JOB_TABLE = "nightly_foreground_jobs"
POLL_S = 0.5
SOURCE = "nightly"  # a night's runs have the source "nightly <night>"


_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _weekdays(field: str) -> str:
    """Crontab's weekday field with numbers as day names (no side effects). Numeric items (``1``,
    ``1-5``, ``*/2``, ``0-6/3``) are expanded to the days crontab means, Sunday = 0 or 7; names pass."""
    if not any(ch.isdigit() for ch in field):
        return field
    days: set[int] = set()
    for part in field.split(","):
        span, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() else 1
        if span == "*":
            first, last = 0, 6
        elif span.isdigit():
            first = last = int(span)
            if step_text:
                last = 6
        elif "-" in span and all(x.isdigit() for x in span.split("-", 1)):
            first, last = (int(x) for x in span.split("-", 1))
        else:
            return field  # names: APScheduler reads them as crontab does
        if not (0 <= first <= last <= 7 and step >= 1):
            raise ValueError(f"weekday {part!r} is not an ascending range within 0-7")
        days.update(day % 7 for day in range(first, last + 1, step))
    return ",".join(_DAYS[day] for day in sorted(days))


def crontab_trigger(expression: str, *, timezone: str) -> Any:
    """A cron trigger with crontab's meaning: APScheduler 3 numbers weekdays from Monday = 0, crontab from
    Sunday = 0, so numeric weekdays are passed by name. ``ValueError`` when it is not a crontab line."""
    from apscheduler.triggers.cron import CronTrigger

    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (minute hour day month weekday), got {len(fields)}")
    minute, hour, day, month, weekday = fields
    weekday = _weekdays(weekday)
    return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, timezone=timezone)


class NightlyConfig(BaseModel):
    """The nightly matrix: when, what (apps x agents x seeds), where, and how many at once."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description="crontab expression: minute hour day month weekday")
    timezone: str = "UTC"
    apps: list[str] = Field(min_length=1)
    agents: list[str] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    backend: Literal["twin", "kube"] = "twin"
    clock: Literal["stepped", "realtime"] | None = None
    kubeconfig: str | None = None
    prometheus_url: str | None = None
    concurrency: int = Field(default=1, ge=1, le=64)
    baseline: bool = True
    schedule: ScheduleOverrides = Field(default_factory=ScheduleOverrides)

    @field_validator("cron")
    @classmethod
    def _crontab(cls, value: str) -> str:
        try:
            crontab_trigger(value, timezone="UTC")
        except ValueError as exc:
            raise ValueError(f"not a crontab expression: {exc}") from None
        return value


def load_nightly(path: Path) -> NightlyConfig:
    """Read and validate the nightly file; ``ConfigError`` naming the file, every bad field and value."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the nightly configuration: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML: {exc}") from None
    try:
        return NightlyConfig.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(str(path), None, ".".join(str(p) for p in e["loc"]) or "document",
                    repr(e.get("input")), e["msg"].removeprefix("Value error, "))
            for e in exc.errors()
        ]  # fmt: skip
        raise ConfigError(f"{path}: invalid nightly configuration", problems) from None


def matrix(config: NightlyConfig) -> list[RunRequest]:
    """One request per app x agent x seed, in that nesting order (no side effects)."""
    return [
        RunRequest(
            app=app,
            seed=seed,
            agent=agent,
            backend=config.backend,
            clock=config.clock,
            kubeconfig=config.kubeconfig,
            prometheus_url=config.prometheus_url,
            baseline=config.baseline,
            schedule=config.schedule,
        )  # fmt: skip
        for app in config.apps
        for agent in config.agents
        for seed in config.seeds
    ]


def new_night() -> str:
    """A night's name: the UTC time its matrix starts, to the millisecond (wall-clock bookkeeping only)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def night_source(night: str) -> str:
    return f"{SOURCE} {night}"


@dataclass(frozen=True)
class Cell:
    """One cell of a night: its request, and the run it became (none when it was refused)."""

    request: RunRequest
    run_id: str | None
    status: str
    error: str = ""
    score: float | None = None
    wall_s: float = 0.0
    bundle: Path | None = None  # the sealed bundle, when there is one

    @property
    def failed(self) -> bool:
        return self.status != "finished"


@dataclass(frozen=True)
class Tick:
    """A cell started or ended, and how many of the night's cells have ended (``done`` of ``total``)."""

    kind: Literal["started", "ended"]
    cell: Cell
    done: int
    total: int


Progress = Callable[[Tick], None]


def run_matrix(
    manager: RunManager,
    config: NightlyConfig,
    *,
    night: str | None = None,
    stop: threading.Event | None = None,
    progress: Progress | None = None,
) -> list[Cell]:
    """Run every cell as one night, at most ``config.concurrency`` at once; a cell whose cluster is busy
    waits its turn, one that is refused is recorded and the matrix goes on. ``progress`` hears of every
    start and end."""
    stop = stop or threading.Event()
    source = night_source(night or new_night())
    tell = progress or (lambda _tick: None)
    requests = matrix(config)
    pending = list(enumerate(requests))
    running: dict[int, tuple[RunRequest, RunRow, float]] = {}
    cells: dict[int, Cell] = {}

    def ended(index: int, cell: Cell) -> None:
        cells[index] = cell
        tell(Tick("ended", cell, len(cells), len(requests)))

    while (pending or running) and not stop.is_set():
        while pending and len(running) < config.concurrency:
            index, request = pending[0]
            try:
                row = manager.submit(request, source=source)
            except (TargetBusy, TooManyRuns):
                break  # try again once one of ours has ended
            except ConfigError as exc:
                ended(index, Cell(request, None, "refused", str(exc)))
            else:
                running[index] = (request, row, time.monotonic())
                tell(Tick("started", Cell(request, row.id, row.status), len(cells), len(requests)))
            pending.pop(0)
        for index, (request, row, began) in list(running.items()):
            if manager.wait(row.id, timeout=0):
                del running[index]
                ended(index, _ended(manager, request, row, began))
        if running or pending:
            stop.wait(POLL_S)
    for index, (request, row, began) in running.items():  # asked to stop: stopped, not abandoned
        manager.stop(row.id)
        manager.wait(row.id)
        ended(index, _ended(manager, request, row, began))
    return [cells[i] for i in sorted(cells)]


def _ended(manager: RunManager, request: RunRequest, row: RunRow, began: float) -> Cell:
    wall = time.monotonic() - began
    now = manager.registry.get(row.id)
    if now is None:
        return Cell(request, row.id, "unknown", wall_s=wall)
    bundle = now.home / RUN_DIR / BUNDLE_DIR
    return Cell(
        request, row.id, now.status, now.error or "", score=now.marathon_score, wall_s=wall,
        bundle=bundle if is_sealed(bundle) else None,
    )  # fmt: skip


def runs_of(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def night_header(night: str, config: NightlyConfig) -> str:
    """The line a night starts with (no side effects)."""
    return f"night {night}: {runs_of(len(matrix(config)))}, {config.concurrency} at once"


def tick_line(tick: Tick) -> str:
    """One progress line (no side effects)."""
    cell, r = tick.cell, tick.cell.request
    score = "-" if cell.score is None else f"{cell.score:.1f}"
    return (
        f"{tick.kind:<7}  {r.app}  {r.agent}  seed {r.seed}  run {cell.run_id or '-'}  {cell.status}  "
        f"score {score}  wall {cell.wall_s:.1f}s  {tick.done}/{tick.total} done"
    )


def summary_table(cells: list[Cell]) -> str:
    """The night's table, one row per cell, and how many failed (no side effects)."""
    header = ("app", "agent", "seed", "status", "score", "report", "bundle")
    rows = [header] + [
        (c.request.app, c.request.agent, str(c.request.seed), c.status,
         "-" if c.score is None else f"{c.score:.1f}",
         f"/runs/{c.run_id}/report" if c.run_id else "-", str(c.bundle) if c.bundle else "-")
        for c in cells
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    failed = sum(c.failed for c in cells)
    lines.append(f"{runs_of(len(cells))}, {failed} failed")
    return "\n".join(lines)


def print_night(line: str) -> None:
    print(line, flush=True)


# The scheduled job is stored by reference in the job store; it finds the process's manager here.
_SERVING: dict[str, Any] = {}


def scheduled_matrix(config_path: str) -> None:
    manager: RunManager | None = _SERVING.get("manager")
    stop: threading.Event | None = _SERVING.get("stop")
    say: Callable[[str], None] = _SERVING.get("say", print_night)
    if manager is None or stop is None or stop.is_set():
        return
    night = new_night()
    config = load_nightly(Path(config_path))
    say(night_header(night, config))
    cells = run_matrix(manager, config, night=night, stop=stop, progress=lambda tick: say(tick_line(tick)))
    say(summary_table(cells))
    upcoming = next_run_at()
    if upcoming is not None and not stop.is_set():
        say(f"next night at {upcoming}")


def next_run_at() -> str | None:
    """When the scheduler of this process fires the matrix next, or None when it schedules none."""
    scheduler = _SERVING.get("scheduler")
    if scheduler is None or not scheduler.running:
        return None
    job = scheduler.get_job(JOB_ID)
    when: datetime | None = None if job is None else job.next_run_time
    return None if when is None else when.isoformat()


def upcoming_night(config: NightlyConfig, *, now: datetime) -> str:
    """When the matrix's cron trigger fires next after ``now`` (no side effects)."""
    when: datetime = crontab_trigger(config.cron, timezone=config.timezone).get_next_fire_time(None, now)
    return when.isoformat()


def stop_scheduler(scheduler: Any, *, wait: bool = False) -> None:
    """No new job, and a matrix in progress starts no further run (the server stops those it runs);
    ``wait``: until that matrix has ended."""
    stop: threading.Event | None = _SERVING.get("stop")
    if stop is not None:
        stop.set()
    scheduler.shutdown(wait=wait)
    if _SERVING.get("scheduler") is scheduler:
        del _SERVING["scheduler"]


def start_scheduler(
    manager: RunManager,
    *,
    config_path: Path,
    db_url: str,
    table: str = JOB_TABLE,
    say: Callable[[str], None] = print_night,
) -> Any:
    """A background scheduler firing the matrix on the file's cron expression, its job kept in the
    registry's database in ``table`` (replaced on every start, so an edited file takes effect); ``say``
    tells each night's progress."""
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    config = load_nightly(config_path)
    _SERVING["manager"] = manager
    _SERVING["stop"] = threading.Event()
    _SERVING["say"] = say
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=db_url, tablename=table)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600},
        timezone=config.timezone,
    )
    scheduler.add_job(
        "orchestrator.api.nightly:scheduled_matrix",
        crontab_trigger(config.cron, timezone=config.timezone),
        args=[str(config_path.resolve())],
        id=JOB_ID,
        replace_existing=True,
    )
    scheduler.start()
    _SERVING["scheduler"] = scheduler
    return scheduler
