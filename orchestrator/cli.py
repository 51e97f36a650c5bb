"""The ``marathon`` command line: one argparse tree, each area registering its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

from orchestrator import __version__
from orchestrator.errors import InputError, OrchestratorError

# Each module exposes ``register(subparsers)``; a subcommand sets ``func(args) -> int`` as its handler.
COMMAND_MODULES: tuple[str, ...] = (
    "orchestrator.catalog.commands",
    # ``catalog admit`` and ``catalog export-ctk``: added to the catalog command, so registered after it.
    "orchestrator.admission.commands",
    "orchestrator.mechanisms.experiment_commands",
    "orchestrator.catalog.manifest_commands",
    "orchestrator.schedule_commands",
    "orchestrator.bundle.commands",
    "orchestrator.score.commands",
    "orchestrator.mechanisms.commands",
    "orchestrator.twin.commands",
    "orchestrator.telemetry.commands",
    "orchestrator.run.commands",
    "orchestrator.api.commands",
)


class _Registrar(Protocol):
    def __call__(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="marathon",
        description="Continuous, overlapping fault-injection marathons for scoring autonomous SRE agents.",
    )
    parser.add_argument("--version", action="version", version=f"marathon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        register: _Registrar = importlib.import_module(name).register
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except InputError as exc:
        print(f"marathon: error: {exc}", file=sys.stderr)
        return 2
    except OrchestratorError as exc:
        print(f"marathon: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("marathon: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
