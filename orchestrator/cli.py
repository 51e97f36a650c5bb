"""The ``marathon`` command line: one argparse tree, each area registering its own subcommands."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Protocol

from orchestrator import __version__
from orchestrator.errors import InputError, OrchestratorError

# Each module exposes ``register(subparsers)``; a subcommand sets ``func(args) -> int`` as its handler.
# A command line imports only the modules of its own command, so ``marathon --help`` and ``marathon
# score`` do not load the twin, the runner and the control plane. The help shown here is the one each
# module registers (a test holds the two equal).
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "catalog": (
        "validate and list fault catalog entries",
        # ``catalog admit`` and ``catalog export-ctk`` are added to the catalog command, so come after it.
        (
            "orchestrator.catalog.commands",
            "orchestrator.admission.commands",
            "orchestrator.mechanisms.experiment_commands",
        ),
    ),
    "manifests": (
        "render the apps' Kubernetes manifests from topologies",
        ("orchestrator.catalog.manifest_commands",),
    ),
    "images": (
        "build code-fault images from the apps' pinned upstream source",
        ("orchestrator.images.commands",),
    ),
    "schedule": ("print the seeded fault schedule of a marathon", ("orchestrator.schedule_commands",)),
    "bundle": ("seal, verify and pack run bundles", ("orchestrator.bundle.commands",)),
    "score": ("score a run bundle (docs/metrics.md)", ("orchestrator.score.commands",)),
    "report": ("write a self-contained HTML report of a run bundle", ("orchestrator.score.commands",)),
    "recover": ("revert the faults a crashed run left behind", ("orchestrator.mechanisms.commands",)),
    "twin": (
        "the simulated cluster (serve one app behind the Kubernetes API)",
        ("orchestrator.twin.commands",),
    ),
    "rules": ("inspect and check the alert rule pack", ("orchestrator.telemetry.commands",)),
    "alerts": ("evaluate the rule pack against a Prometheus", ("orchestrator.telemetry.commands",)),
    "run": ("run a marathon and score it", ("orchestrator.api.run_command",)),
    "serve": ("serve the control plane API and dashboard", ("orchestrator.api.commands",)),
    "nightly": (
        "run the nightly benchmark matrix",
        # ``orchestrator.api.job_commands`` extends the nightly command, so comes after it.
        ("orchestrator.api.commands", "orchestrator.api.job_commands"),
    ),
    "leaderboard": (
        "mean score and its 95 percent CI per app and agent over seeds, from the registry or bundles",
        ("orchestrator.api.leaderboard_commands",),
    ),
}
COMMAND_MODULES: tuple[str, ...] = tuple(
    dict.fromkeys(module for _, modules in COMMANDS.values() for module in modules)
)


class DefaultsShown(argparse.HelpFormatter):
    """Help that gives each option's default, unless its help already speaks of it or it has none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if not action.option_strings or "default" in text or default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """The parser of ``marathon`` and, through ``add_subparsers``, of every command under it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsShown)
        super().__init__(*args, **kwargs)


class _Registrar(Protocol):
    def __call__(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (importing only its modules), or with
    ``command="-"`` the overview: every command's name and help, importing none of them."""
    parser: argparse.ArgumentParser = Parser(
        prog="marathon",
        description="Continuous, overlapping fault-injection marathons for scoring autonomous SRE agents.",
    )
    parser.add_argument("--version", action="version", version=f"marathon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command == "-":
        for name, (help_text, _) in COMMANDS.items():
            subparsers.add_parser(name, help=help_text, add_help=False)
        return parser
    modules = COMMAND_MODULES if command is None else COMMANDS[command][1]
    for name in modules:
        register: _Registrar = importlib.import_module(name).register
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The top level takes no option with a value, so the first word that is not an option is the command.
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    parser = build_parser(word if word in COMMANDS else "-")
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


def entry() -> NoReturn:
    """The ``marathon`` executable (and ``python -m orchestrator.cli``): ``main``, then the process ends.

    A run leaves two thousand modules and a few hundred thousand objects behind, and tearing the interpreter
    down frees them one by one: a second at the end of every marathon. Once ``main`` has returned, the exit
    handlers have run and nothing but this thread is left, the process ends without that teardown. When a
    thread that is not a daemon still runs, the interpreter exits as usual, which waits for it.
    """
    code = main()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()  # what the usual exit would run first: finalizers, logging, pools
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe loses what it would lose anyway
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
