"""``marathon twin serve``: run one app's twin behind the Kubernetes API until interrupted."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from orchestrator.catalog.apps import app_names
from orchestrator.errors import ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    twin = subparsers.add_parser(
        "twin", help="the simulated cluster (serve one app behind the Kubernetes API)"
    )
    verbs = twin.add_subparsers(dest="twin_command", metavar="VERB", required=True)
    serve = verbs.add_parser(
        "serve", help="serve a twin on 127.0.0.1 behind a fresh token and write a kubeconfig (0600) with it"
    )
    serve.add_argument("--app", required=True, choices=app_names(), help="the application to simulate")
    serve.add_argument("--port", type=int, default=0, help="listen port on 127.0.0.1 (0: a free port)")
    serve.add_argument("--seed", type=int, default=1, help="the simulation's seed")
    serve.add_argument(
        "--clock", choices=("stepped", "realtime"), default="realtime",
        help="realtime: simulated time follows the wall clock; stepped: it moves only when asked",
    )  # fmt: skip
    serve.add_argument(
        "--speed", type=float, default=1.0, help="simulated seconds per wall second (realtime)"
    )
    serve.add_argument(
        "--remote-write", dest="remote_write", default=None, help="Prometheus remote-write URL"
    )
    serve.add_argument(
        "--kubeconfig", type=Path, default=Path("twin.kubeconfig"), help="the kubeconfig file to write"
    )
    serve.add_argument(
        "--fixed-epoch", dest="fixed_epoch", action="store_true",
        help="simulated time 0 is the fixed epoch (2026-01-01T00:00:00Z), not the wall-clock now, so what "
        "the twin writes does not depend on when it ran (admission reads it so)",
    )  # fmt: skip
    serve.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from orchestrator.twin.launch import start_twin  # keeps `marathon --help` free of the server stack
    from orchestrator.twin.timefmt import use_epoch

    if args.speed <= 0:
        raise ConfigError(f"--speed must be positive, got {args.speed}")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}")
    if not args.fixed_epoch:  # a served twin starts at the wall-clock now, as a real cluster lives in it
        use_epoch(datetime.now(UTC))
    running = start_twin(
        args.app,
        seed=args.seed,
        kubeconfig=args.kubeconfig,
        clock=args.clock,
        speed=args.speed,
        remote_write_url=args.remote_write,
        port=args.port,
    )
    print(f"twin of {args.app} serving at {running.url} ({args.clock} clock)", flush=True)
    print(f"kubeconfig: {running.kubeconfig} (its token is the only way in)", flush=True)
    if args.clock == "stepped":
        # The token and the CA stay in the owner-only kubeconfig: this output may end up in logs.
        view = f"kubectl --kubeconfig {running.kubeconfig} config view --raw -o jsonpath="
        authority = "{.clusters[0].cluster.certificate-authority-data}"
        print(f"advance with: TOKEN=$({view}'{{.users[0].user.token}}')", flush=True)
        print(f"  {view}'{authority}' | base64 -d > ca.crt", flush=True)
        print(
            f"  curl --cacert ca.crt -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' "
            f"-X POST {running.url}/twin/v1/advance -d '{{\"seconds\": 120}}'",
            flush=True,
        )
    done = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        done.wait()
    finally:
        running.stop()
    if running.twin_error is not None:
        print(f"marathon: twin clock failed: {running.twin_error}", file=sys.stderr)
        return 1
    return 0
