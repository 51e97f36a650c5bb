"""The run registry: one row per run the control plane started, in any SQLAlchemy database (SQLite by
default, PostgreSQL by URL), so runs, their scores and the leaderboard survive a restart of the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from orchestrator.errors import ConfigError

ACTIVE = ("queued", "running", "stopping")
ENDED = ("finished", "stopped", "failed", "interrupted")
STATUSES = ACTIVE + ENDED

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("seq", Integer, nullable=False, index=True),
    Column("app", String(64), nullable=False, index=True),
    Column("seed", Integer, nullable=False),
    Column("agent", String(128), nullable=False, index=True),
    Column("backend", String(16), nullable=False),
    Column("clock", String(16), nullable=False),
    Column("target", String(512), nullable=False, index=True),
    Column("status", String(16), nullable=False, index=True),
    Column("source", String(128), nullable=False, default="api"),
    Column("config_json", Text, nullable=False),
    Column("home", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("ended_at", String(40)),
    Column("boundary", Integer, nullable=False, default=0),
    Column("boundaries", Integer, nullable=False, default=0),
    Column("schedule_t", Float, nullable=False, default=0.0),
    Column("active_faults", Text, nullable=False, default="[]"),
    Column("injections", Integer, nullable=False, default=0),
    Column("reverts", Integer, nullable=False, default=0),
    Column("failures", Integer, nullable=False, default=0),
    Column("invocations", Integer, nullable=False, default=0),
    Column("firing", Integer, nullable=False, default=0),
    Column("worker_pid", Integer),
    Column("owner_pid", Integer),  # the server (or nightly process) following the run
    Column("runner_run_id", String(128)),
    Column("reason", String(64)),
    Column("error", Text),
    Column("recovery", Text),
    Column("score_json", Text),
    Column("marathon_score", Float),
)
# At most one active run per cluster target, kept by the database itself, so two servers (or two request
# threads) starting runs at the same moment cannot both pass the check.
_one_active = runs.c.status.in_(ACTIVE)
Index("runs_seq_unique", runs.c.seq, unique=True)
Index(
    "runs_one_active_per_target", runs.c.target, unique=True, sqlite_where=_one_active,
    postgresql_where=_one_active,
)  # fmt: skip
CREATE_ATTEMPTS = 50


@dataclass(frozen=True)
class RunRow:
    """A registry row as the API sees it."""

    id: str
    seq: int
    app: str
    seed: int
    agent: str
    backend: str
    clock: str
    target: str
    status: str
    source: str
    config: dict[str, Any]
    home: Path
    created_at: str
    ended_at: str | None
    boundary: int
    boundaries: int
    schedule_t: float
    active_faults: list[str]
    injections: int
    reverts: int
    failures: int
    invocations: int
    firing: int
    worker_pid: int | None
    owner_pid: int | None
    runner_run_id: str | None
    reason: str | None
    error: str | None
    recovery: str | None
    score: dict[str, Any] | None
    marathon_score: float | None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def _row(mapping: Any) -> RunRow:
    m = dict(mapping)
    return RunRow(
        id=m["id"], seq=m["seq"], app=m["app"], seed=m["seed"], agent=m["agent"], backend=m["backend"],
        clock=m["clock"], target=m["target"], status=m["status"], source=m["source"],
        config=json.loads(m["config_json"]), home=Path(m["home"]), created_at=m["created_at"],
        ended_at=m["ended_at"], boundary=m["boundary"], boundaries=m["boundaries"],
        schedule_t=m["schedule_t"], active_faults=json.loads(m["active_faults"]),
        injections=m["injections"], reverts=m["reverts"], failures=m["failures"],
        invocations=m["invocations"], firing=m["firing"], worker_pid=m["worker_pid"],
        owner_pid=m["owner_pid"],
        runner_run_id=m["runner_run_id"], reason=m["reason"], error=m["error"], recovery=m["recovery"],
        score=json.loads(m["score_json"]) if m["score_json"] else None, marathon_score=m["marathon_score"],
    )  # fmt: skip


class TargetBusy(Exception):
    """Another run is active on the same cluster target."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


class IdTaken(Exception):
    """Another run was registered under the same id first."""


class Registry:
    """Reads and writes runs; every write is its own transaction."""

    def __init__(self, url: str) -> None:
        try:
            self.engine: Engine = create_engine(url, future=True)
        except (SQLAlchemyError, ValueError, ImportError) as exc:
            raise ConfigError(f"--db {url!r}: not a usable database URL: {exc}") from exc
        if self.engine.dialect.name == "sqlite":
            # Writers from the event threads and the request threads: wait for the lock, don't fail.
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            metadata.create_all(self.engine)
            for index in runs.indexes:  # a registry written by an older release lacks the newer ones
                index.create(self.engine, checkfirst=True)
        except SQLAlchemyError as exc:
            raise ConfigError(f"--db {url!r}: cannot open the run registry: {exc}") from exc

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as connection:
            yield connection

    def create(self, *, fields: dict[str, Any]) -> RunRow:
        """Insert a queued run; ``TargetBusy`` when a run is active on its target.

        The database's unique indexes decide races: a second active run on the target, or a sequence
        number another writer took first, fails the insert, which is then answered or retried.
        """
        for _ in range(CREATE_ATTEMPTS):
            busy = self._active_on(fields["target"])
            if busy is not None:
                raise TargetBusy(busy)
            try:
                with self._tx() as tx:
                    seq = (tx.execute(select(func.max(runs.c.seq))).scalar() or 0) + 1
                    values = {
                        **fields,
                        "seq": seq,
                        "config_json": json.dumps(fields["config_json"], sort_keys=True),
                        "home": str(fields["home"]),
                        "status": "queued",
                    }
                    tx.execute(runs.insert().values(**values))
            except IntegrityError:
                if self.get(fields["id"]) is not None:
                    raise IdTaken(fields["id"]) from None
                continue  # another run took the target (answered above) or this sequence number
            found = self.get(fields["id"])
            assert found is not None
            return found
        raise ConfigError(f"run {fields['id']}: could not be registered after {CREATE_ATTEMPTS} attempts")

    def _active_on(self, target: str) -> str | None:
        with self._tx() as tx:
            row = tx.execute(
                select(runs.c.id).where(runs.c.target == target, runs.c.status.in_(ACTIVE))
            ).first()
        return None if row is None else str(row[0])

    def get(self, run_id: str) -> RunRow | None:
        with self._tx() as tx:
            row = tx.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
        return None if row is None else _row(row)

    def update(self, run_id: str, **values: Any) -> None:
        if "active_faults" in values:
            values["active_faults"] = json.dumps(sorted(values["active_faults"]))
        if "score" in values:
            score = values.pop("score")
            values["score_json"] = None if score is None else json.dumps(score, sort_keys=True)
            values["marathon_score"] = None if score is None else score.get("marathon_score")
        with self._tx() as tx:
            tx.execute(update(runs).where(runs.c.id == run_id).values(**values))

    def page(
        self,
        *,
        app: str | None = None,
        agent: str | None = None,
        status: str | None = None,
        source: str | None = None,
        seed: int | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[int, list[RunRow]]:
        """Newest first, with the total count of matching runs. ``source`` matches a run's source or its
        first word (the nightly job writes ``nightly <date>``)."""
        conditions: list[ColumnElement[bool]] = []
        for column, value in ((runs.c.app, app), (runs.c.agent, agent), (runs.c.status, status)):
            if value is not None:
                conditions.append(column == value)
        if seed is not None:
            conditions.append(runs.c.seed == seed)
        if source is not None:
            dated = runs.c.source.startswith(f"{source} ", autoescape=True)
            conditions.append(or_(runs.c.source == source, dated))
        query = select(runs).where(*conditions)
        count = select(func.count()).select_from(runs).where(*conditions)
        with self._tx() as tx:
            total = int(tx.execute(count).scalar() or 0)
            rows = tx.execute(query.order_by(runs.c.seq.desc()).offset(offset).limit(limit)).mappings()
            return total, [_row(r) for r in rows]

    def active(self) -> list[RunRow]:
        with self._tx() as tx:
            rows = tx.execute(select(runs).where(runs.c.status.in_(ACTIVE)).order_by(runs.c.seq)).mappings()
            return [_row(r) for r in rows]

    def scored(self) -> list[RunRow]:
        """Every run with a score, oldest first (the leaderboard's input)."""
        with self._tx() as tx:
            rows = tx.execute(
                select(runs).where(runs.c.marathon_score.is_not(None)).order_by(runs.c.seq)
            ).mappings()
            return [_row(r) for r in rows]

    def ended(self) -> list[RunRow]:
        """Every ended run, scored or not, oldest first (the leaderboard's input: it keeps the completed
        ones in its means and lists the others apart)."""
        with self._tx() as tx:
            rows = tx.execute(select(runs).where(runs.c.status.in_(ENDED)).order_by(runs.c.seq)).mappings()
            return [_row(r) for r in rows]


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
