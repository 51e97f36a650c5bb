"""``marathon run``: one marathon from the command line, recorded in the control plane's run registry as it
goes (source ``cli``), so ``marathon serve`` shows it beside the runs it started, under the same id as its
bundle. ``--no-register`` runs it without a registry."""

from __future__ import annotations

import argparse
import sys

from orchestrator.api.commands import add_registry_arguments, db_url
from orchestrator.run.commands import DESCRIPTION, HELP, add_run_arguments, config_from_args, print_result


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("run", help=HELP, description=DESCRIPTION)
    add_run_arguments(parser)
    add_registry_arguments(parser)
    parser.add_argument(
        "--no-register", action="store_true", help="do not record the run in the control plane's registry"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from orchestrator.run.config import agent_command
    from orchestrator.run.progress import RunProgress
    from orchestrator.run.runner import run_marathon

    config = config_from_args(args)  # every argument problem is told before anything is shown or started
    agent_command(config)  # and so is an agent that names nothing runnable
    recorder = None
    if not args.no_register:
        from orchestrator.api.cli_runs import CliRecorder
        from orchestrator.api.registry import Registry

        recorder = CliRecorder(Registry(db_url(args)), data_dir=args.data.resolve(), config=config)
    with RunProgress(quiet=config.quiet, title=f"{config.app} seed {config.seed} {config.agent_name}") as bar:
        handler = bar if recorder is None else recorder.following(bar)
        try:
            result = run_marathon(config, events=handler)
        except BaseException as exc:
            if recorder is not None:
                recorder.failed(exc)
            raise
    if recorder is not None:
        recorder.finished(result)
        if recorder.run_id is not None:
            print(f"run: {recorder.run_id} (registry {recorder.registry_url})", file=sys.stderr)
    return print_result(result)
