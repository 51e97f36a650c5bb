"""The readiness gate of a real cluster: waits until Prometheus returns data for every series family the
rule pack reads, for each installed app (run by deploy/ready.sh after every Deployment is Available).

The families come from the rule expressions themselves, not from a list kept here: every metric a rule of
the installed apps names, except the few that exist only while something is broken (EVENT_ONLY). A
datastore exporter's family is awaited only in the namespaces of apps that have such a datastore.

    python deploy/readiness.py --prometheus-url http://127.0.0.1:9090 --apps online-boutique --timeout 900
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPOSITORY))

from orchestrator.catalog.topologies import load_topology  # noqa: E402
from orchestrator.telemetry.rules import load_rule_pack  # noqa: E402
from orchestrator.vocabulary.series import EXPORTERS, series_names  # noqa: E402

# kube-state-metrics publishes these only for a container that is waiting or has terminated: a healthy
# cluster has none, so waiting for them would never end.
EVENT_ONLY = frozenset(
    {"kube_pod_container_status_waiting_reason", "kube_pod_container_status_last_terminated_reason"}
)
# Series without a namespace label (alert_rules/SERIES.md: the node series).
CLUSTER_WIDE_PREFIX = "kube_node_"

# PromQL words that can stand before "(", "{" or "[" and are not metrics.
_NOT_METRICS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "group",
        "rate",
        "irate",
        "increase",
        "delta",
        "idelta",
        "deriv",
        "changes",
        "resets",
        "abs",
        "absent",
        "absent_over_time",
        "clamp_min",
        "clamp_max",
        "label_replace",
        "label_join",
        "histogram_quantile",
        "max_over_time",
        "min_over_time",
        "avg_over_time",
        "sum_over_time",
        "count_over_time",
        "last_over_time",
        "present_over_time",
        "time",
        "timestamp",
        "vector",
        "scalar",
        "sort",
        "sort_desc",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "offset",
        "bool",
        "le",
    }
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SELECTED = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{|\[)")
_WORD = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b")


def metrics_in(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: every name given a selector or a range, plus every
    bare word that is a series of the contract (no side effects)."""
    text = _STRING.sub('""', expr)
    selected = set(_SELECTED.findall(text)) - _NOT_METRICS
    bare = set(_WORD.findall(text)) & series_names()
    return selected | bare


@dataclass(frozen=True)
class Check:
    """One family to wait for: ``query`` returns data once the family is there."""

    family: str
    namespace: str | None
    query: str


def rule_families(apps: Iterable[str], rule_dir: Path | None = None) -> set[str]:
    """Every metric read by a rule that applies to one of ``apps`` (no side effects beyond reading files)."""
    wanted = set(apps)
    pack = load_rule_pack(rule_dir)
    return {
        name
        for rule in pack.rules
        if rule.app is None or rule.app in wanted
        for name in metrics_in(rule.expr)
    }


def readiness_checks(apps: Iterable[str], rule_dir: Path | None = None) -> list[Check]:
    """The Prometheus queries that must all return data before a marathon may start (no side effects)."""
    apps = list(apps)
    families = rule_families(apps, rule_dir) - EVENT_ONLY
    exporter_kinds: dict[str, set[str]] = {}
    for kind, exporter in EXPORTERS.items():
        for name in exporter.series():
            exporter_kinds.setdefault(name, set()).add(kind)
    checks: list[Check] = []
    for family in sorted(families):
        if family.startswith(CLUSTER_WIDE_PREFIX):
            checks.append(Check(family, None, f"count({family})"))
            continue
        for app in apps:
            topology = load_topology(app)
            if family in exporter_kinds:
                kinds = {str(s.datastore_kind) for s in topology.services if s.datastore_kind is not None}
                if not exporter_kinds[family] & kinds:
                    continue
            selector = f'{family}{{namespace="{topology.namespace}"}}'
            # An exporter's *_up is there even when it cannot reach its datastore: wait for 1.
            query = f"count({selector} == 1)" if family.endswith("_up") else f"count({selector})"
            checks.append(Check(family, topology.namespace, query))
    return checks


def missing(checks: list[Check], *, prometheus_url: str) -> list[Check]:
    """The checks whose query returns no data now."""
    import httpx

    absent = []
    with httpx.Client(base_url=prometheus_url, timeout=10.0) as client:
        for check in checks:
            try:
                response = client.get("/api/v1/query", params={"query": check.query})
                response.raise_for_status()
                result = response.json()["data"]["result"]
            except (httpx.HTTPError, KeyError, ValueError):
                result = []
            if not result:
                absent.append(check)
    return absent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus-url", required=True)
    parser.add_argument("--apps", nargs="+", required=True)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait (default: 900)")
    parser.add_argument("--interval", type=float, default=15.0, help="seconds between rounds (default: 15)")
    parser.add_argument("--list", action="store_true", help="print the queries and exit")
    args = parser.parse_args(argv)
    checks = readiness_checks(args.apps)
    if args.list:
        for check in checks:
            print(check.query)
        return 0
    deadline = time.monotonic() + args.timeout
    while True:
        absent = missing(checks, prometheus_url=args.prometheus_url)
        if not absent:
            print(f"readiness: all {len(checks)} series families return data", file=sys.stderr)
            return 0
        if time.monotonic() >= deadline:
            for check in absent:
                print(f"readiness: no data for {check.query}", file=sys.stderr)
            print(
                f"readiness: {len(absent)} of {len(checks)} families still empty after {args.timeout:.0f} s",
                file=sys.stderr,
            )
            return 1
        print(f"readiness: waiting for {len(absent)} of {len(checks)} families", file=sys.stderr)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
