"""Nightly benchmarks: a matrix of apps x agents x seeds from ``deploy/nightly.yaml``, run with a bounded
number of marathons at once, results in the run registry (and so on the leaderboard).

The schedule is APScheduler 3's cron trigger with its SQLAlchemy job store in the registry's database, so
a restarted server keeps its schedule and knows a missed night.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.api.models import RunRequest, ScheduleOverrides
from orchestrator.api.registry import RunRow, TargetBusy
from orchestrator.api.runs import RunManager, TooManyRuns
from orchestrator.errors import ConfigError, Problem

JOB_ID = "nightly-matrix"
POLL_S = 0.5


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


@dataclass(frozen=True)
class Cell:
    request: RunRequest
    run_id: str | None
    status: str
    error: str = ""


def run_matrix(
    manager: RunManager,
    config: NightlyConfig,
    *,
    source: str = "nightly",
    stop: threading.Event | None = None,
) -> list[Cell]:
    """Run every cell, at most ``config.concurrency`` at once; a cell whose cluster is busy waits its turn,
    one that is refused is recorded and the matrix goes on."""
    stop = stop or threading.Event()
    pending = list(enumerate(matrix(config)))
    running: dict[int, tuple[RunRequest, RunRow]] = {}
    cells: dict[int, Cell] = {}
    while (pending or running) and not stop.is_set():
        while pending and len(running) < config.concurrency:
            index, request = pending[0]
            try:
                running[index] = (request, manager.submit(request, source=source))
            except (TargetBusy, TooManyRuns):
                break  # try again once one of ours has ended
            except ConfigError as exc:
                cells[index] = Cell(request, None, "refused", str(exc))
            pending.pop(0)
        for index, (request, row) in list(running.items()):
            if manager.wait(row.id, timeout=0):
                cells[index] = _ended(manager, request, row)
                del running[index]
        if running or pending:
            stop.wait(POLL_S)
    for index, (request, row) in running.items():  # asked to stop: stopped, not abandoned
        manager.stop(row.id)
        manager.wait(row.id)
        cells[index] = _ended(manager, request, row)
    return [cells[i] for i in sorted(cells)]


def _ended(manager: RunManager, request: RunRequest, row: RunRow) -> Cell:
    ended = manager.registry.get(row.id)
    return Cell(request, row.id, ended.status if ended else "unknown", (ended.error or "") if ended else "")


# The scheduled job is stored by reference in the job store; it finds the server's manager here.
_SERVING: dict[str, Any] = {}


def scheduled_matrix(config_path: str) -> None:
    manager: RunManager | None = _SERVING.get("manager")
    stop: threading.Event | None = _SERVING.get("stop")
    if manager is None or stop is None or stop.is_set():
        return
    stamp = time.strftime("%Y-%m-%d", time.gmtime())  # a label for the registry's source column only
    run_matrix(manager, load_nightly(Path(config_path)), source=f"nightly {stamp}", stop=stop)


def stop_scheduler(scheduler: Any) -> None:
    """No new job, and a matrix in progress starts no further run (the server stops those it runs)."""
    scheduler.shutdown(wait=False)
    stop: threading.Event | None = _SERVING.get("stop")
    if stop is not None:
        stop.set()


def start_scheduler(manager: RunManager, *, config_path: Path, db_url: str) -> Any:
    """A background scheduler firing the matrix on the file's cron expression, its job kept in the
    registry's database (replaced on every start, so an edited file takes effect)."""
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    config = load_nightly(config_path)
    _SERVING["manager"] = manager
    _SERVING["stop"] = threading.Event()
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=db_url, tablename="nightly_jobs")},
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
    return scheduler
