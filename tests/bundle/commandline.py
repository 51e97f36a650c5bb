"""Runs one area's subcommands through a parser of their own, independent of the other areas' modules."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence


def run_command(module: str, argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="marathon")
    importlib.import_module(module).register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    result: int = args.func(args)
    return result
