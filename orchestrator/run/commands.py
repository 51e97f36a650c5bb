"""``marathon run``: one marathon against the twin (default) or a real cluster, scored at the end."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from orchestrator.agents.options import OptionValue, options_help
from orchestrator.catalog.apps import app_names
from orchestrator.errors import ConfigError, Problem
from orchestrator.run.config import RunConfig, load_agent_config, make_config
from orchestrator.run.runner import RunResult
from orchestrator.schedule_commands import add_load_arguments, load_from_args, seed_argument

HELP = "run a marathon and score it"
DESCRIPTION = "Inject the seeded fault schedule, invoke the agent every delta seconds, seal and score."


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``marathon run``; the command itself (which also records the run in the control
    plane's registry) is ``orchestrator.api.run_command``."""
    defaults = {name: field.default for name, field in RunConfig.model_fields.items()}
    parser.add_argument("--app", required=True, choices=app_names(), help="the application under test")
    parser.add_argument("--seed", required=True, type=seed_argument, help="run seed (integer >= 0)")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="a baseline agent by name (noop, runbook, oracle, react)")
    who.add_argument("--agent-cmd", help="any command line to invoke as the agent")
    parser.add_argument(
        "--agent-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the agent, repeatable; VALUE is a number or true/false when it reads as one in "
        f"JSON, else a string. Built-in agents accept: {options_help()}",
    )
    parser.add_argument(
        "--agent-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="a YAML or JSON mapping of agent options; --agent-option overrides it",
    )
    parser.add_argument(
        "--backend", choices=("twin", "kube"), default="twin", help="the simulated cluster or a real one"
    )
    clock_help = "stepped (default on the twin) or realtime (always on a real cluster)"
    parser.add_argument("--clock", choices=("stepped", "realtime"), default=None, help=clock_help)
    parser.add_argument("--speed", type=float, default=1.0, help="realtime twin: simulated s per wall s")
    add_load_arguments(parser)
    parser.add_argument("--delta", type=int, default=defaults["delta_s"], help="seconds between invocations")
    budget_help = "wall seconds per invocation (default: delta less 10 s, within 1-110 s)"
    parser.add_argument("--budget", type=float, default=None, help=budget_help)
    parser.add_argument(
        "--injection-period", type=int, default=defaults["injection_period_s"],
        help="seconds in which faults arrive",
    )  # fmt: skip
    parser.add_argument(
        "--observation-period", type=int, default=defaults["observation_period_s"],
        help="seconds after the injection period, with no new arrivals",
    )  # fmt: skip
    parser.add_argument(
        "--shared-culprits",
        action="store_true",
        help="let one service be the culprit of several active faults at once (default: one at a time)",
    )
    parser.add_argument(
        "--decoys", type=int, default=defaults["decoys"],
        help="harmless changes (redeploys, config edits) on services no active fault touches",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/<run id>)")
    parser.add_argument(
        "--runs", type=Path, default=defaults["runs_root"], help="where runs and baselines live"
    )
    parser.add_argument("--kubeconfig", type=Path, default=None, help="kube backend: the cluster")
    parser.add_argument("--prometheus-url", default=None, help="kube backend: the cluster's Prometheus")
    parser.add_argument("--model-url", default=None, help="upstream OpenAI-compatible URL to meter")
    parser.add_argument("--token-budget", type=int, default=None, help="model tokens per invocation")
    parser.add_argument("--no-baseline", action="store_true", help="skip the no-action baseline run")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run the agent without its bubblewrap sandbox (it can then read the run's ground truth); "
        "recorded in the bundle and shown on the score",
    )
    parser.add_argument(
        "--agent-path",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="an absolute path the sandboxed agent may read (its installation, say), repeatable; files named "
        "by absolute path on --agent-cmd are readable without it",
    )


OPTION_FLAG = "--agent-option"
Where = tuple[str, int | None]  # the file (or flag) an option was given in, and its line


def option_argument(text: str) -> tuple[str, OptionValue]:
    """``KEY=VALUE`` as a name and a value: a JSON number or true/false, else the string as written."""
    key, equals, raw = text.partition("=")
    if not equals or not key:
        raise ConfigError(
            "invalid agent option", [Problem(OPTION_FLAG, None, text, "", "expected KEY=VALUE")]
        )
    try:
        parsed = json.loads(raw)
    except ValueError:
        return key, raw
    finite = not isinstance(parsed, float) or math.isfinite(parsed)
    return key, parsed if isinstance(parsed, bool | int | float) and finite else raw


def agent_options_from_args(args: argparse.Namespace) -> tuple[dict[str, object], dict[str, Where]]:
    """The options of ``--agent-config`` overridden by each ``--agent-option``, and where each was given."""
    options: dict[str, object] = {}
    where: dict[str, Where] = {}
    if args.agent_config is not None:
        document = load_agent_config(args.agent_config)
        options.update(document.options)
        where.update({name: (str(document.path), document.lines.get(name)) for name in document.options})
    for text in args.agent_option:
        name, value = option_argument(text)
        options[name] = value
        where[name] = (OPTION_FLAG, None)
    return options, where


def _located(error: ConfigError, where: dict[str, Where]) -> ConfigError:
    """``error`` with each problem of an agent option told where that option was given (no side effects)."""
    fields = {f"agent_options.{name}": name for name in where}
    fields.update({f"agent_options.{name}.[key]": name for name in where})
    problems = []
    for problem in error.problems:
        name = fields.get(problem.field)
        if name is None:
            problems.append(problem)
        else:
            file, line = where[name]
            problems.append(Problem(file, line, name, problem.value, problem.message))
    return ConfigError(error.message, problems)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The run configuration from the command line; ``ConfigError`` names every bad value."""
    options, where = agent_options_from_args(args)
    try:
        return _make_config(args, options=options)
    except ConfigError as exc:
        raise _located(exc, where) from None


def _make_config(args: argparse.Namespace, *, options: dict[str, object]) -> RunConfig:
    count, cap = load_from_args(args)
    return make_config(
        app=args.app,
        seed=args.seed,
        agent=args.agent,
        agent_cmd=args.agent_cmd,
        agent_options=options,
        backend=args.backend,
        clock=args.clock,
        speed=args.speed,
        faults=count,
        max_concurrent=cap,
        delta_s=args.delta,
        budget_s=args.budget,
        injection_period_s=args.injection_period,
        observation_period_s=args.observation_period,
        exclusive_culprits=not args.shared_culprits,
        decoys=args.decoys,
        out=args.out,
        runs_root=args.runs,
        kubeconfig=args.kubeconfig,
        prometheus_url=args.prometheus_url,
        model_url=args.model_url,
        token_budget=args.token_budget,
        baseline=not args.no_baseline,
        quiet=args.quiet,
        sandboxed=not args.unsandboxed,
        agent_paths=tuple(args.agent_path),
    )


def print_result(result: RunResult) -> int:
    """The score and where the run's files are; the exit status (130 for a run that did not complete)."""
    sys.stdout.write(result.score_text)
    print(f"bundle: {result.bundle_dir}")
    print(f"score: {result.run_dir / 'score.json'}  ({result.reason}, {result.wall_s:.1f} s wall)")
    return 0 if result.reason == "completed" else 130
