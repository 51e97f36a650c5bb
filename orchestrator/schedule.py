"""The seeded marathon schedule: which catalog faults are injected when, and when each is reverted.

The same app, catalog entries, seed and parameters give the same schedule, byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestrator.catalog.faults import CATEGORY_WEIGHTS, Category, Entry
from orchestrator.catalog.faults import interference_keys as _interference_keys
from orchestrator.catalog.loading import Catalog
from orchestrator.catalog.topologies import published_schedule
from orchestrator.catalog.topology import ServiceKind, Topology
from orchestrator.errors import Problem, ScheduleError
from orchestrator.rng import derive

# Bump whenever the same inputs would produce a different schedule, so old hashes never match new plans.
SCHEDULE_VERSION = 5

_WHERE = "schedule parameters"


@dataclass(frozen=True)
class ScheduleParams:
    """The knobs of the arrival process. Times are whole seconds on the schedule clock.

    ``ramp`` is the ratio of the arrival intensity at the end of the injection period to that at its start.
    ``max_concurrent`` caps simultaneously active faults; ``None`` means no cap. ``exclusive_culprits`` makes
    every service the culprit of at most one active fault: two faults on one service would mask each
    other's symptoms and repairs, so neither could be told apart or verified as repaired. ``decoy_count``
    harmless changes (see ``Decoy``) are spread over the injection period.
    """

    fault_count: int = 60
    injection_period_s: int = 3600
    observation_period_s: int = 1800
    ramp: float = 4.0
    min_duration_s: int = 240
    max_duration_s: int = 720
    delta_s: int = 120
    max_concurrent: int | None = None
    exclusive_culprits: bool = True
    decoy_count: int = 12

    def __post_init__(self) -> None:
        problems = _param_problems(self)
        if problems:
            raise ScheduleError("invalid schedule parameters", problems)

    @property
    def run_end_s(self) -> int:
        return self.injection_period_s + self.observation_period_s


_INT_MINIMUMS = {
    "fault_count": 0, "injection_period_s": 1, "observation_period_s": 1,
    "min_duration_s": 1, "max_duration_s": 1, "delta_s": 1, "decoy_count": 0,
}  # fmt: skip


def default_load(app: str) -> tuple[int, int | None]:
    """The fault arrivals and the cap (None: no cap) of ``app``'s schedules unless told otherwise: the
    app's ``published_schedule``, with which its plans reproduce the published average and peak
    concurrency (README, "Concurrency"); the planner's own defaults (60 arrivals, no cap) for an app
    without one."""
    profile = published_schedule(app)
    if profile is None:
        return ScheduleParams.fault_count, ScheduleParams.max_concurrent
    return profile.fault_count, profile.max_concurrent


def _int_problem(field: str, value: object, *, minimum: int) -> Problem | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return Problem(_WHERE, None, field, repr(value), "must be an integer")
    if value < minimum:
        return Problem(_WHERE, None, field, repr(value), f"must be >= {minimum}")
    return None


def _param_problems(params: ScheduleParams) -> list[Problem]:
    checks = [
        _int_problem(field, getattr(params, field), minimum=low) for field, low in _INT_MINIMUMS.items()
    ]
    if params.max_concurrent is not None:
        checks.append(_int_problem("max_concurrent", params.max_concurrent, minimum=1))
    if not isinstance(params.exclusive_culprits, bool):
        checks.append(Problem(_WHERE, None, "exclusive_culprits", repr(params.exclusive_culprits),
                              "must be true or false"))  # fmt: skip
    ramp = params.ramp
    if isinstance(ramp, bool) or not isinstance(ramp, int | float) or not math.isfinite(ramp) or ramp <= 0:
        checks.append(Problem(_WHERE, None, "ramp", repr(ramp), "must be a finite number > 0"))
    problems = [p for p in checks if p is not None]
    bad = {p.field for p in problems}
    # Cross-field checks only between fields that are valid on their own, so every message is meaningful.
    if not bad & {"min_duration_s", "max_duration_s"} and params.min_duration_s > params.max_duration_s:
        message = f"is greater than max_duration_s = {params.max_duration_s}"
        problems.append(Problem(_WHERE, None, "min_duration_s", str(params.min_duration_s), message))
    # The runner invokes the agent every delta_s seconds, so both periods are whole invocations.
    for field in ("injection_period_s", "observation_period_s"):
        value = getattr(params, field)
        if not bad & {field, "delta_s"} and value % params.delta_s:
            problems.append(
                Problem(_WHERE, None, field, str(value), f"is not a multiple of delta_s = {params.delta_s}")
            )
    return problems


def check_seed(seed: object) -> int:
    """The seed if it is a non-negative integer, else ``ScheduleError`` naming it (no side effects)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problem = Problem(_WHERE, None, "seed", repr(seed), "must be an integer >= 0")
        raise ScheduleError("invalid seed", [problem])
    return seed


@dataclass(frozen=True)
class Activation:
    """One planned fault: injected at second ``at_s`` of the schedule clock and reverted at ``end_s``, the
    drawn instants (not the invocation boundaries around them)."""

    index: int
    arrival: int
    at_s: int
    duration_s: int
    catalog_id: str
    category: Category
    mechanism: str
    target: str

    @property
    def end_s(self) -> int:
        return self.at_s + self.duration_s


DecoyKind = Literal["redeploy", "config"]
DECOY_KINDS: tuple[DecoyKind, ...] = ("redeploy", "config")


@dataclass(frozen=True)
class Decoy:
    """A harmless change at second ``at_s`` to ``target``, a service outside the scope of every fault active
    then: a ``redeploy`` (a rollout of what it runs, with a change cause) or a ``config`` edit (its log
    level). Nothing breaks, but the rollout history shows a recent change, which an agent that rolls back
    whatever changed last takes for a culprit (docs/metrics.md, "Decoys")."""

    index: int
    at_s: int
    change: DecoyKind
    target: str


@dataclass(frozen=True)
class SkippedArrival:
    """An arrival that was not placed: ``cap`` (the cap was reached at every instant it could wait for) or
    ``conflict`` (no compatible entry at any of them); ``at_s`` is the last instant it tried."""

    arrival: int
    at_s: int
    reason: str


@dataclass(frozen=True)
class Schedule:
    app: str
    seed: int
    params: ScheduleParams
    entries_hash: str
    content_hash: str
    activations: tuple[Activation, ...]
    skipped: tuple[SkippedArrival, ...]
    decoys: tuple[Decoy, ...] = ()
    version: int = SCHEDULE_VERSION


def entries_hash(entries: Iterable[Entry]) -> str:
    """sha256 over the sorted (id, content hash) pairs of the entries (no side effects)."""
    pairs = sorted((entry.id, entry.content_hash()) for entry in entries)
    return hashlib.sha256(canonical_json(pairs).encode()).hexdigest()


def schedule_hash(
    *, app: str, seed: int, params: ScheduleParams, catalog_hash: str, decoy_services: Sequence[str] = ()
) -> str:
    """The schedule's identity: everything the plan is a function of, plus the planner version."""
    identity = {
        "app": app,
        "catalog": catalog_hash,
        "decoy_services": sorted(decoy_services),
        "params": dataclasses.asdict(params),
        "seed": seed,
        "version": SCHEDULE_VERSION,
    }
    return hashlib.sha256(canonical_json(identity).encode()).hexdigest()


def arrival_times(rng: random.Random, *, count: int, period_s: int, ramp: float) -> list[float]:
    """``count`` sorted times in [0, period_s) whose density rises linearly ``ramp``-fold (no side effects).

    Inverse CDF of the density ``1 + (ramp - 1) x`` on x in [0, 1): solving ``a x^2 + x = u (1 + a)`` with
    ``a = (ramp - 1) / 2`` in the rationalised form, which stays exact as ``a`` approaches 0.
    """
    a = (ramp - 1.0) / 2.0
    times = []
    for _ in range(count):
        u = rng.random()
        x = 2.0 * u * (1.0 + a) / (1.0 + math.sqrt(1.0 + 4.0 * a * u * (1.0 + a)))
        times.append(min(x, 1.0) * period_s)
    return sorted(times)


def category_weights(categories: Iterable[Category]) -> dict[Category, float]:
    """Production weights renormalised over the categories given, in ``Category`` order (no side effects)."""
    present = set(categories)
    total = sum(CATEGORY_WEIGHTS[c] for c in present)
    return {c: CATEGORY_WEIGHTS[c] / total for c in Category if c in present}


def draw_category(rng: random.Random, weights: Mapping[Category, float]) -> Category:
    """One category drawn with probability proportional to its weight; only ``rng`` changes."""
    ordered = [c for c in Category if weights.get(c, 0.0) > 0.0]
    if not ordered:
        raise ScheduleError("no category has a positive weight")
    point = rng.random() * sum(weights[c] for c in ordered)
    for category in ordered:
        point -= weights[category]
        if point < 0.0:
            return category
    return ordered[-1]  # only reachable through float rounding at the top end


def plan_schedule(
    *,
    app: str,
    entries: Sequence[Entry],
    seed: int,
    params: ScheduleParams | None = None,
    scopes: Mapping[str, frozenset[str]] | None = None,
    decoy_services: Sequence[str] = (),
) -> Schedule:
    """The marathon schedule for ``app``: pure, no side effects; only the inputs decide the result.

    Arrivals follow the ramped intensity; each is injected at its drawn second and reverted its drawn
    duration later (whole seconds, uniform over [min_duration_s, max_duration_s], clipped to the run end):
    the runner applies both at those instants, between invocations. Each arrival draws its category once,
    with production weights over the categories present, then a compatible entry in that category
    uniformly. An arrival that finds no compatible entry in its category, or ``max_concurrent`` faults
    active, keeps its category and drifts to the next revert of a fault in its way, the first instant
    the way may clear (so the injected mix keeps the production proportions); one that finds no way
    before the end of the injection period is recorded as skipped.

    Decoys (``params.decoy_count``, from a stream of their own) land on drawn seconds of the injection period,
    each on one of ``decoy_services`` outside what every fault active or starting there touches (``scopes``,
    by catalog id: its affected scope and culprits); a decoy with no such service is dropped. No
    ``decoy_services``, no decoys.
    """
    seed = check_seed(seed)
    params = params or ScheduleParams()
    mine = sorted((e for e in entries if e.app == app), key=lambda e: e.id)
    if params.fault_count and not mine:
        raise ScheduleError(
            "cannot plan faults without catalog entries",
            [Problem(_WHERE, None, "app", app, "the catalog has no entries for this app")],
        )
    repeated = sorted({a.id for a, b in zip(mine, mine[1:], strict=False) if a.id == b.id})
    if repeated:
        problems = [
            Problem(_WHERE, None, "entries", catalog_id, "the id appears more than once")
            for catalog_id in repeated
        ]
        raise ScheduleError("catalog entry ids must be unique", problems)
    catalog_hash = entries_hash(mine)
    activations, skipped = _place(entries=mine, seed=seed, params=params)
    decoys = _decoys(activations, seed=seed, params=params, scopes=scopes or {}, services=decoy_services)
    return Schedule(
        app=app,
        seed=seed,
        params=params,
        entries_hash=catalog_hash,
        content_hash=schedule_hash(
            app=app, seed=seed, params=params, catalog_hash=catalog_hash, decoy_services=decoy_services
        ),
        activations=tuple(activations),
        skipped=tuple(skipped),
        decoys=tuple(decoys),
    )


def decoy_inputs(catalog: Catalog, topology: Topology) -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    """What decoys are placed by (no side effects): what each entry touches (its affected scope, culprits and
    target) and the services a decoy may change, those running the app's own code (not its datastores,
    queues or load generator)."""
    scopes = {e.id: catalog.scope(e) | frozenset(e.culprits) | {e.target} for e in catalog.entries}
    services = tuple(
        s.name for s in topology.services if s.kind in (ServiceKind.SERVICE, ServiceKind.GATEWAY)
    )
    return scopes, services


def _decoys(
    activations: Sequence[Activation],
    *,
    seed: int,
    params: ScheduleParams,
    scopes: Mapping[str, frozenset[str]],
    services: Sequence[str],
) -> list[Decoy]:
    if not services:
        return []
    rng = derive(seed, "schedule.decoys")
    candidates = sorted(services)
    last_start = params.injection_period_s - 1
    placed: list[Decoy] = []
    for _ in range(params.decoy_count):
        # Drawn for every decoy, placed or not, so one dropped decoy does not shift the others.
        at_s = min(math.floor(rng.uniform(0, params.injection_period_s)), last_start)
        change = DECOY_KINDS[rng.randrange(len(DECOY_KINDS))]
        pick = rng.random()
        live = [a for a in activations if a.at_s <= at_s < a.end_s]
        busy = set().union(*(scopes.get(a.catalog_id, frozenset({a.target})) for a in live))
        taken = {d.target for d in placed if d.at_s == at_s}  # one change per service and instant
        free = [s for s in candidates if s not in busy and s not in taken]
        if free:
            placed.append(Decoy(index=0, at_s=at_s, change=change, target=free[int(pick * len(free))]))
    ordered = sorted(placed, key=lambda d: (d.at_s, d.target, d.change))
    return [dataclasses.replace(d, index=i) for i, d in enumerate(ordered)]


def _place(
    *, entries: list[Entry], seed: int, params: ScheduleParams
) -> tuple[list[Activation], list[SkippedArrival]]:
    arrivals_rng = derive(seed, "schedule.arrivals")
    categories_rng = derive(seed, "schedule.categories")
    entries_rng = derive(seed, "schedule.entries")
    durations_rng = derive(seed, "schedule.durations")
    by_category: dict[Category, list[Entry]] = {}
    for entry in entries:
        by_category.setdefault(entry.category, []).append(entry)
    keys = {
        entry.id: _conflict_keys(entry, exclusive_culprits=params.exclusive_culprits) for entry in entries
    }
    base_weights = category_weights(by_category)
    last_start = params.injection_period_s - 1
    times = arrival_times(
        arrivals_rng, count=params.fault_count, period_s=params.injection_period_s, ramp=params.ramp
    )
    placed: list[Activation] = []
    skipped: list[SkippedArrival] = []
    for arrival, time_s in enumerate(times):
        # Drawn for every arrival, placed or not, so one skip does not shift the durations of the rest.
        duration_s = round(durations_rng.uniform(params.min_duration_s, params.max_duration_s))
        category = draw_category(categories_rng, base_weights)
        at_s: int | None = min(math.floor(time_s), last_start)
        reason = ""
        tried = 0
        while at_s is not None:
            tried = at_s
            end_s = min(at_s + duration_s, params.run_end_s)
            # Faults placed by earlier arrivals that overlap [at_s, end_s); a fault reverted at at_s does
            # not overlap (reverts due at an instant go before its injections).
            overlapping = [a for a in placed if a.at_s < end_s and a.end_s > at_s]
            if params.max_concurrent is not None and _peak(overlapping, at_s, end_s) >= params.max_concurrent:
                reason = "cap"
            else:
                busy_ids = {a.catalog_id for a in overlapping}
                busy_keys = frozenset().union(*(keys[a.catalog_id] for a in overlapping))
                candidates = [
                    e
                    for e in by_category[category]
                    if e.id not in busy_ids and keys[e.id].isdisjoint(busy_keys)
                ]
                if candidates:
                    chosen = candidates[entries_rng.randrange(len(candidates))]
                    placed.append(
                        Activation(
                            index=0, arrival=arrival, at_s=at_s, duration_s=end_s - at_s,
                            catalog_id=chosen.id, category=chosen.category, mechanism=str(chosen.mechanism),
                            target=chosen.target,
                        )
                    )  # fmt: skip
                    break
                reason = "conflict"
            at_s = _next_revert(overlapping, after=at_s, latest=last_start)
        else:
            skipped.append(SkippedArrival(arrival=arrival, at_s=tried, reason=reason))
    ordered = sorted(placed, key=lambda a: (a.at_s, a.arrival))
    return [dataclasses.replace(a, index=i) for i, a in enumerate(ordered)], skipped


def _next_revert(overlapping: Sequence[Activation], *, after: int, latest: int) -> int | None:
    """The first revert of a fault in the way after ``after`` and no later than ``latest``, the earliest
    instant the way may clear; None when none does (no side effects)."""
    ends = [a.end_s for a in overlapping if after < a.end_s <= latest]
    return min(ends) if ends else None


def _peak(activations: Sequence[Activation], start_s: int, end_s: int) -> int:
    """The most of ``activations`` active at once within [start_s, end_s) (no side effects)."""
    moments = {start_s} | {a.at_s for a in activations if start_s < a.at_s < end_s}
    return max(sum(1 for a in activations if a.at_s <= t < a.end_s) for t in moments)


def _conflict_keys(entry: Entry, *, exclusive_culprits: bool) -> frozenset[str]:
    """Keys two active faults must not share: the entry's interference keys, and with ``exclusive_culprits``
    one per culprit service (no side effects)."""
    keys = _interference_keys(entry)
    if exclusive_culprits:
        keys |= {f"culprit:{service}" for service in entry.culprits}
    return keys


def _fixed(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(value, dict):
        return {str(k): _fixed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fixed(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, floats rounded to 6 decimals: equal values give equal bytes."""
    return json.dumps(_fixed(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def schedule_to_record(schedule: Schedule) -> dict[str, Any]:
    """The schedule as plain JSON-ready data (the form stored in run bundles)."""
    return {
        "version": schedule.version,
        "app": schedule.app,
        "seed": schedule.seed,
        "params": dataclasses.asdict(schedule.params),
        "entries_hash": schedule.entries_hash,
        "content_hash": schedule.content_hash,
        "activations": [
            {**dataclasses.asdict(a), "category": str(a.category), "end_s": a.end_s}
            for a in schedule.activations
        ],
        "skipped": [dataclasses.asdict(s) for s in schedule.skipped],
        "decoys": [dataclasses.asdict(d) for d in schedule.decoys],
    }


def schedule_to_json(schedule: Schedule) -> str:
    return canonical_json(schedule_to_record(schedule))


@dataclass(frozen=True)
class ConcurrencyProfile:
    """Simultaneously active faults, time-weighted over the whole run and over the injection period.

    ``steps`` is the step series ``(time_s, active)``: ``active`` holds from ``time_s`` to the next step.
    """

    average_run: float
    peak_run: int
    average_injection: float
    peak_injection: int
    placed: int
    skipped_cap: int
    skipped_conflict: int
    steps: tuple[tuple[int, int], ...]


def concurrency(schedule: Schedule) -> ConcurrencyProfile:
    """Concurrency statistics of a schedule (no side effects)."""
    delta: dict[int, int] = {0: 0}
    for a in schedule.activations:
        delta[a.at_s] = delta.get(a.at_s, 0) + 1
        delta[a.end_s] = delta.get(a.end_s, 0) - 1
    steps: list[tuple[int, int]] = []
    level = 0
    for time_s in sorted(delta):
        level += delta[time_s]
        if not steps or steps[-1][1] != level:
            steps.append((time_s, level))
    run_end = schedule.params.run_end_s
    injection_end = schedule.params.injection_period_s
    average_run, peak_run = _window(steps, run_end)
    average_injection, peak_injection = _window(steps, injection_end)
    reasons = [s.reason for s in schedule.skipped]
    return ConcurrencyProfile(
        average_run=average_run,
        peak_run=peak_run,
        average_injection=average_injection,
        peak_injection=peak_injection,
        placed=len(schedule.activations),
        skipped_cap=reasons.count("cap"),
        skipped_conflict=reasons.count("conflict"),
        steps=tuple(steps),
    )


def _window(steps: Sequence[tuple[int, int]], end_s: int) -> tuple[float, int]:
    """Time-weighted average and peak of the step series over [0, end_s)."""
    area = 0
    peak = 0
    for i, (start, level) in enumerate(steps):
        stop = min(steps[i + 1][0] if i + 1 < len(steps) else end_s, end_s)
        if stop > start:
            area += level * (stop - start)
            peak = max(peak, level)
    return area / end_s, peak
