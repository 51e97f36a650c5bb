"""Which of an app's Deployments deploy/install.sh sends traces from, read from the app's topology.

python deploy/workloads.py traced online-boutique   # services and gateways (no datastore, no load generator)
python deploy/workloads.py java train-ticket        # the traced ones written in Java (they get the agent)
python deploy/workloads.py namespace train-ticket
"""

from __future__ import annotations

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPOSITORY))

from orchestrator.catalog.topologies import load_topology  # noqa: E402
from orchestrator.catalog.topology import ServiceKind  # noqa: E402

TRACED = (ServiceKind.SERVICE, ServiceKind.GATEWAY)


def traced(app: str) -> list[str]:
    """The app's own request-serving Deployments (no side effects beyond reading the topology)."""
    return [s.name for s in load_topology(app).services if s.kind in TRACED]


def java(app: str) -> list[str]:
    """The traced Deployments whose language is Java, which the OpenTelemetry Java agent instruments."""
    services = {s.name: s for s in load_topology(app).services}
    return [name for name in traced(app) if services[name].language == "Java"]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in {"traced", "java", "namespace"}:
        print("usage: workloads.py traced|java|namespace APP", file=sys.stderr)
        return 2
    what, app = argv
    if what == "namespace":
        print(load_topology(app).namespace)
    else:
        print("\n".join(traced(app) if what == "traced" else java(app)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
