"""``marathon schedule``: print the seeded fault schedule of a marathon and how many faults overlap."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.topology import PublishedConcurrency
from orchestrator.errors import Problem, ScheduleError
from orchestrator.schedule import (
    ConcurrencyProfile,
    Schedule,
    ScheduleParams,
    canonical_json,
    concurrency,
    decoy_inputs,
    plan_schedule,
    schedule_to_record,
)

# Parameter names as the user typed them, so an error names the flag rather than the field.
_FLAGS = {
    "fault_count": "--faults",
    "max_concurrent": "--max-concurrent",
    "injection_period_s": "--injection-period",
    "observation_period_s": "--observation-period",
    "ramp": "--ramp",
    "decoy_count": "--decoys",
}


def seed_argument(text: str) -> int:
    """argparse type for ``--seed``: a non-negative decimal integer."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = ScheduleParams()
    parser = subparsers.add_parser(
        "schedule",
        help="print the seeded fault schedule of a marathon",
        description=(
            "Plan the seeded fault schedule for an app from its admitted catalog entries, as a run does "
            "(nothing is injected), and report concurrency."
        ),
    )
    parser.add_argument(
        "--app", required=True, choices=app_names(), help="application whose catalog is drawn from"
    )
    parser.add_argument("--seed", required=True, type=seed_argument, help="run seed (integer >= 0)")
    parser.add_argument("--json", action="store_true", help="print canonical JSON instead of a table")
    parser.add_argument("--faults", type=int, default=defaults.fault_count, help="arrivals to draw")
    parser.add_argument(
        "--max-concurrent", type=int, default=None, help="cap on simultaneously active faults"
    )
    parser.add_argument(
        "--injection-period", type=int, default=defaults.injection_period_s, help="seconds of injections"
    )
    parser.add_argument(
        "--observation-period", type=int, default=defaults.observation_period_s, help="seconds after them"
    )
    parser.add_argument("--ramp", type=float, default=defaults.ramp, help="end-to-start intensity ratio")
    parser.add_argument(
        "--shared-culprits",
        action="store_true",
        help="let one service be the culprit of several active faults at once (default: one at a time)",
    )
    parser.add_argument(
        "--decoys", type=int, default=defaults.decoy_count,
        help="harmless changes on services no active fault touches",
    )  # fmt: skip
    parser.set_defaults(func=run)


def params_from_args(args: argparse.Namespace) -> ScheduleParams:
    """Schedule parameters from the command line; ``ScheduleError`` names the offending flag and value."""
    try:
        return ScheduleParams(
            fault_count=args.faults,
            injection_period_s=args.injection_period,
            observation_period_s=args.observation_period,
            ramp=args.ramp,
            max_concurrent=args.max_concurrent,
            exclusive_culprits=not args.shared_culprits,
            decoy_count=args.decoys,
        )
    except ScheduleError as exc:
        problems = [
            Problem("command line", None, _FLAGS.get(p.field, p.field), p.value, p.message)
            for p in exc.problems
        ]
        raise ScheduleError("invalid schedule options", problems) from exc


def run(args: argparse.Namespace) -> int:
    from orchestrator.catalog.admissions import admitted_ids
    from orchestrator.catalog.loading import load_catalog
    from orchestrator.catalog.topologies import load_topology

    params = params_from_args(args)
    catalog = load_catalog(args.app)
    topology = load_topology(args.app)
    scopes, decoy_services = decoy_inputs(catalog, topology)
    # The entries a run draws from: the admitted ones (all of them when the app has no admission file).
    admitted = admitted_ids(args.app)
    text = report(
        app=args.app,
        seed=args.seed,
        params=params,
        entries=[e for e in catalog.entries if admitted is None or e.id in admitted],
        published=topology.published_concurrency,
        as_json=args.json,
        scopes=scopes,
        decoy_services=decoy_services,
    )
    print(text)
    return 0


def report(
    *,
    app: str,
    seed: int,
    params: ScheduleParams,
    entries: Sequence[Entry],
    published: PublishedConcurrency | None,
    as_json: bool,
    scopes: Mapping[str, frozenset[str]] | None = None,
    decoy_services: Sequence[str] = (),
) -> str:
    """The text ``marathon schedule`` prints: a table with concurrency figures, set beside the app's
    published ones when its topology has them, or canonical JSON."""
    schedule = plan_schedule(
        app=app, entries=entries, seed=seed, params=params, scopes=scopes, decoy_services=decoy_services
    )
    stats = concurrency(schedule)
    if as_json:
        return report_json(schedule, stats, published)
    return render_table(schedule, stats, published)


def report_json(schedule: Schedule, stats: ConcurrencyProfile, published: PublishedConcurrency | None) -> str:
    record = {
        "schedule": schedule_to_record(schedule),
        "concurrency": dataclasses.asdict(stats),
        "published": None if published is None else published.model_dump(),
    }
    return canonical_json(record)


def clock(seconds: int) -> str:
    """``mm:ss`` on the schedule clock; minutes go past 59 rather than wrap."""
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def render_table(
    schedule: Schedule, stats: ConcurrencyProfile, published: PublishedConcurrency | None
) -> str:
    params = schedule.params
    arrivals = len(schedule.activations) + len(schedule.skipped)
    lines = [
        f"schedule {schedule.content_hash[:12]} for {schedule.app}, seed {schedule.seed}",
        f"{arrivals} arrivals: {stats.placed} placed, {len(schedule.skipped)} skipped "
        f"({stats.skipped_cap} at the cap, {stats.skipped_conflict} without a compatible entry)",
        "",
        f"{'time':>6}  {'dur':>5}  {'category':<17}  {'mechanism':<9}  {'target':<24}  entry",
    ]
    for a in schedule.activations:
        lines.append(
            f"{clock(a.at_s):>6}  {clock(a.duration_s):>5}  {a.category:<17}  {a.mechanism:<9}  "
            f"{a.target:<24}  {a.catalog_id}"
        )
    if schedule.decoys:
        lines += [
            "",
            f"{len(schedule.decoys)} decoys (harmless changes on services no active fault touches):",
        ]
        lines += [f"{clock(d.at_s):>6}  {d.change:<8}  {d.target}" for d in schedule.decoys]
    cap = "none" if params.max_concurrent is None else str(params.max_concurrent)
    rows = [
        (f"whole run ({params.run_end_s / 60:g} min)", f"{stats.average_run:.2f}", str(stats.peak_run)),
        (
            f"injection period ({params.injection_period_s / 60:g} min)",
            f"{stats.average_injection:.2f}",
            str(stats.peak_injection),
        ),
    ]
    if published is not None:
        rows.append((f"published, {schedule.app}", f"{published.average:.2f}", str(published.peak)))
    lines += ["", f"{f'active faults (cap {cap})':<34}  {'average':>7}  {'peak':>4}"]
    lines += [f"  {name:<32}  {average:>7}  {peak:>4}" for name, average, peak in rows]
    return "\n".join(lines)
