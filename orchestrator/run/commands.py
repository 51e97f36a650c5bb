"""``marathon run``: one marathon against the twin (default) or a real cluster, scored at the end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.catalog.topology import APPS
from orchestrator.run.config import RunConfig, make_config
from orchestrator.run.progress import RunProgress
from orchestrator.run.runner import run_marathon
from orchestrator.schedule_commands import seed_argument


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = RunConfig(app=APPS[0], seed=0, agent_cmd="true")
    parser = subparsers.add_parser(
        "run",
        help="run a marathon and score it",
        description="Inject the seeded fault schedule, invoke the agent every delta seconds, seal and score.",
    )
    parser.add_argument("--app", required=True, choices=APPS)
    parser.add_argument("--seed", required=True, type=seed_argument, help="run seed (integer >= 0)")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="a baseline agent by name (noop, runbook, oracle, react)")
    who.add_argument("--agent-cmd", help="any command line to invoke as the agent")
    parser.add_argument("--backend", choices=("twin", "kube"), default="twin")
    clock_help = "stepped (default on the twin) or realtime (always on a real cluster)"
    parser.add_argument("--clock", choices=("stepped", "realtime"), default=None, help=clock_help)
    parser.add_argument("--speed", type=float, default=1.0, help="realtime twin: simulated s per wall s")
    parser.add_argument("--faults", type=int, default=defaults.faults, help="fault arrivals to draw")
    parser.add_argument("--delta", type=int, default=defaults.delta_s, help="seconds between invocations")
    parser.add_argument("--budget", type=float, default=None, help="wall seconds per invocation")
    parser.add_argument("--injection-period", type=int, default=defaults.injection_period_s)
    parser.add_argument("--observation-period", type=int, default=defaults.observation_period_s)
    parser.add_argument("--max-concurrent", type=int, default=None)
    parser.add_argument(
        "--shared-culprits",
        action="store_true",
        help="let one service be the culprit of several active faults at once (default: one at a time)",
    )
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/<run id>)")
    parser.add_argument("--runs", type=Path, default=defaults.runs_root, help="where runs and baselines live")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="kube backend: the cluster")
    parser.add_argument("--prometheus-url", default=None, help="kube backend: the cluster's Prometheus")
    parser.add_argument("--model-url", default=None, help="upstream OpenAI-compatible URL to meter")
    parser.add_argument("--token-budget", type=int, default=None, help="model tokens per invocation")
    parser.add_argument("--no-baseline", action="store_true", help="skip the no-action baseline run")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(func=_run)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The run configuration from the command line; ``ConfigError`` names every bad value."""
    clock = args.clock or ("realtime" if args.backend == "kube" else "stepped")
    budget = args.budget if args.budget is not None else min(110.0, max(1.0, args.delta - 10.0))
    return make_config(
        app=args.app,
        seed=args.seed,
        agent=args.agent,
        agent_cmd=args.agent_cmd,
        backend=args.backend,
        clock=clock,
        speed=args.speed,
        faults=args.faults,
        delta_s=args.delta,
        budget_s=budget,
        injection_period_s=args.injection_period,
        observation_period_s=args.observation_period,
        max_concurrent=args.max_concurrent,
        exclusive_culprits=not args.shared_culprits,
        out=args.out,
        runs_root=args.runs,
        kubeconfig=args.kubeconfig,
        prometheus_url=args.prometheus_url,
        model_url=args.model_url,
        token_budget=args.token_budget,
        baseline=not args.no_baseline,
        quiet=args.quiet,
    )


def _run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    with RunProgress(quiet=config.quiet, title=f"{config.app} seed {config.seed} {config.agent_name}") as bar:
        result = run_marathon(config, progress=bar)
    sys.stdout.write(result.score_text)
    print(f"bundle: {result.bundle_dir}")
    print(f"score: {result.run_dir / 'score.json'}  ({result.reason}, {result.wall_s:.1f} s wall)")
    return 0 if result.reason == "completed" else 130
