"""``marathon schedule``: print the seeded fault schedule of a marathon and how many faults overlap."""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    default_load,
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


NO_CAP = "none"


def cap_argument(text: str) -> int | str:
    """argparse type for ``--max-concurrent``: an integer (the parameters check its range), or ``none`` for
    no cap."""
    if text.strip().lower() == NO_CAP:
        return NO_CAP
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none', got {text!r}") from None


def seed_range(text: str) -> range:
    """argparse type for ``--seeds``: ``A-B``, two seeds with A <= B."""
    first, dash, last = text.partition("-")
    try:
        low, high = seed_argument(first), seed_argument(last if dash else first)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected A-B with seeds 0 <= A <= B, got {text!r}") from None
    if low > high:
        raise argparse.ArgumentTypeError(f"expected A-B with seeds 0 <= A <= B, got {text!r}")
    return range(low, high + 1)


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """``--faults`` and ``--max-concurrent``, shared by ``marathon schedule`` and ``marathon run``;
    ``load_from_args`` reads them."""
    parser.add_argument(
        "--faults", type=int, default=None,
        help="fault arrivals to draw (default: the app's published_schedule; 60 for an app without one)",
    )  # fmt: skip
    parser.add_argument(
        "--max-concurrent", type=cap_argument, default=None,
        help="most faults active at once, or 'none' (default: the app's published_schedule; else no cap)",
    )  # fmt: skip


def load_from_args(args: argparse.Namespace) -> tuple[int, int | None]:
    """The arrivals and the cap (None: no cap) as the command line asks: what ``--faults`` and
    ``--max-concurrent`` say, else the app's default load (``default_load``: its published_schedule)."""
    count, cap = default_load(args.app)
    if args.faults is not None:
        count = args.faults
    if args.max_concurrent is not None:
        cap = None if args.max_concurrent == NO_CAP else args.max_concurrent
    return count, cap


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
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--seed", type=seed_argument, help="run seed (integer >= 0)")
    which.add_argument(
        "--seeds", type=seed_range, metavar="A-B",
        help="summarise the concurrency of seeds A to B (inclusive) beside the published figures",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print canonical JSON instead of a table")
    add_load_arguments(parser)
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
    count, cap = load_from_args(args)
    try:
        return ScheduleParams(
            fault_count=count,
            max_concurrent=cap,
            injection_period_s=args.injection_period,
            observation_period_s=args.observation_period,
            ramp=args.ramp,
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
    drawn_from = [e for e in catalog.entries if admitted is None or e.id in admitted]
    if args.seeds is not None:
        summary = summarise(app=args.app, seeds=args.seeds, params=params, entries=drawn_from)
        print(render_summary(summary, topology.published_concurrency, as_json=args.json))
        return 0
    text = report(
        app=args.app,
        seed=args.seed,
        params=params,
        entries=drawn_from,
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


AVERAGE_TOLERANCE = 0.5  # how near the published average and peak a published_schedule comes (README,
PEAK_TOLERANCE = 1.0  # "Concurrency")


@dataclass(frozen=True)
class Summary:
    """The concurrency of the plans of several seeds: means of each plan's whole-run average and peak."""

    app: str
    seeds: range
    placed: float
    average: float
    peak: float
    highest_peak: int


def summarise(*, app: str, seeds: range, params: ScheduleParams, entries: Sequence[Entry]) -> Summary:
    """Plan every seed of ``seeds`` (no side effects) and summarise their concurrency."""
    stats = [concurrency(plan_schedule(app=app, entries=entries, seed=s, params=params)) for s in seeds]
    return Summary(
        app=app,
        seeds=seeds,
        placed=statistics.fmean(x.placed for x in stats),
        average=statistics.fmean(x.average_run for x in stats),
        peak=statistics.fmean(x.peak_run for x in stats),
        highest_peak=max(x.peak_run for x in stats),
    )


def render_summary(summary: Summary, published: PublishedConcurrency | None, *, as_json: bool) -> str:
    seeds = f"{summary.seeds.start}-{summary.seeds.stop - 1}"
    near = None
    if published is not None:
        near = (
            abs(summary.average - published.average) <= AVERAGE_TOLERANCE
            and abs(summary.peak - published.peak) <= PEAK_TOLERANCE
        )
    if as_json:
        record = {
            "app": summary.app, "seeds": seeds, "placed": summary.placed, "average": summary.average,
            "peak": summary.peak, "highest_peak": summary.highest_peak,
            "published": None if published is None else published.model_dump(), "within_tolerance": near,
        }  # fmt: skip
        return canonical_json(record)
    lines = [
        f"{summary.app}, seeds {seeds}: {summary.placed:.1f} faults placed per schedule",
        "",
        f"{'active faults, whole run':<34}  {'average':>7}  {'peak':>4}",
        f"  {'mean over the seeds':<32}  {summary.average:>7.2f}  {summary.peak:>4.1f}",
    ]
    if published is not None:
        lines.append(f"  {'published':<32}  {published.average:>7.2f}  {published.peak:>4}")
        verdict = "within" if near else "NOT within"
        lines += [
            "",
            f"{verdict} {AVERAGE_TOLERANCE:g} of the published average and {PEAK_TOLERANCE:g} of its peak",
        ]
    return "\n".join(lines)
