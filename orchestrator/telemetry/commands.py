"""``marathon rules show|check`` and ``marathon alerts evaluate``: inspect the rule pack, and evaluate it over
a time window of any Prometheus (a real cluster's, or a run's)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from orchestrator.errors import ConfigError, TelemetryError
from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import default_rule_pack_dir, load_rule_pack
from orchestrator.telemetry.server import connect_prometheus


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rules = subparsers.add_parser("rules", help="inspect and check the alert rule pack")
    actions = rules.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="version, hash and rule count per group")
    show.add_argument("--dir", type=Path, default=None, help="rule pack directory (default: alert_rules/)")
    show.set_defaults(func=_show)
    check = actions.add_parser("check", help="load the pack and run promtool check rules (exit 2 if bad)")
    check.add_argument("--dir", type=Path, default=None, help="rule pack directory (default: alert_rules/)")
    check.set_defaults(func=_check)

    alerts = subparsers.add_parser("alerts", help="evaluate the rule pack against a Prometheus")
    actions = alerts.add_subparsers(dest="alerts_command", metavar="ACTION", required=True)
    evaluate = actions.add_parser("evaluate", help="print the alert history of a time window as JSON lines")
    evaluate.add_argument("--prometheus", required=True, help="base URL, e.g. http://127.0.0.1:9090")
    evaluate.add_argument("--start", type=float, required=True, help="window start (epoch seconds)")
    evaluate.add_argument("--until", type=float, required=True, help="window end (epoch seconds)")
    evaluate.add_argument("--every", type=float, default=120.0, help="boundary spacing, s (default 120)")
    evaluate.add_argument("--dir", type=Path, default=None, help="rule pack (default: alert_rules/)")
    evaluate.set_defaults(func=_evaluate)


def _show(args: argparse.Namespace) -> int:
    pack = load_rule_pack(args.dir)
    print(f"rule pack {pack.version} sha256 {pack.sha256}")
    for group, count in Counter(rule.group for rule in pack.rules).items():
        print(f"  {group}: {count} rules")
    print(f"{len(pack.rules)} rules in {len(pack.files)} files")
    return 0


def _check(args: argparse.Namespace) -> int:
    directory: Path = args.dir or default_rule_pack_dir()
    pack = load_rule_pack(directory)
    promtool = shutil.which("promtool")
    if promtool is None:
        raise TelemetryError("promtool is not on PATH: install the Debian package 'prometheus'")
    done = subprocess.run(
        [promtool, "check", "rules", *(str(directory / name) for name in pack.files)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
        return 2
    print(f"ok: {len(pack.rules)} rules, version {pack.version}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    if args.until <= args.start or args.every <= 0:
        raise ConfigError(
            f"--start {args.start} must precede --until {args.until}; --every {args.every} must be positive"
        )
    pack = load_rule_pack(args.dir)
    server = connect_prometheus(args.prometheus)
    evaluator = AlertEvaluator(pack, PrometheusQuerier(server.url), start=args.start)
    boundary = args.start
    while boundary < args.until:
        boundary = min(args.until, boundary + args.every)
        for record in evaluator.evaluate(until=boundary):
            print(record.model_dump_json())
    for failure in evaluator.failures:
        print(f"rule {failure.rule} failed at {failure.at}: {failure.message}", file=sys.stderr)
    return 1 if evaluator.failures else 0
