"""``marathon serve`` (the control plane over HTTP) and ``marathon nightly`` (the benchmark matrix)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, Problem

TOKEN_ENV = "MARATHON_API_TOKEN"
DEFAULT_DATA = Path("runs") / "control"
DEFAULT_NIGHTLY = Path("deploy") / "nightly.yaml"


def add_registry_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the control plane keeps runs: ``serve``, ``nightly``, ``run`` and ``leaderboard`` share them."""
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where run homes live (default: "
                        "%(default)s)")  # fmt: skip
    parser.add_argument("--db", default=None, help="SQLAlchemy URL of the run registry (default: SQLite "
                        "in the data directory; postgresql+psycopg://... works too)")  # fmt: skip


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser("serve", help="serve the control plane API and dashboard")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (beyond loopback only with a token)"
    )
    serve.add_argument("--port", type=_port, default=8080, help="TCP port (0: any free one)")
    serve.add_argument("--token", default=None, help=f"bearer token for mutations and for a run's events, "
                       f"bundle, and live score and report (or ${TOKEN_ENV})")  # fmt: skip
    serve.add_argument("--max-active", type=int, default=4, help="runs at once")
    serve.add_argument(
        "--nightly",
        type=Path,
        default=None,
        help=f"nightly matrix file to schedule (default {DEFAULT_NIGHTLY} when present)",
    )
    serve.add_argument("--no-nightly", action="store_true", help="schedule no nightly matrix")  # fmt: skip
    add_registry_arguments(serve)
    serve.set_defaults(func=_serve)

    nightly = subparsers.add_parser(
        "nightly", help="run the nightly benchmark matrix",
        description="Run the nightly matrix (apps x agents x seeds) on its cron schedule, in the foreground "
        "until interrupted, or once now. Each execution is one night in the run registry (GET /nightly).",
    )  # fmt: skip
    nightly.add_argument("--once", action="store_true", help="run the matrix now, once, and exit (default: "
                         "run it on its cron schedule until interrupted)")  # fmt: skip
    nightly.add_argument("--config", type=Path, default=DEFAULT_NIGHTLY, help="the matrix file (default: "
                         "%(default)s)")  # fmt: skip
    add_registry_arguments(nightly)
    nightly.set_defaults(func=_nightly)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535)")
    return port


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts, so a port in use is one line and no side
    effect (the registry, the nightly schedule and run recovery start only once it is bound)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        field, value = ("--host", host) if isinstance(exc, socket.gaierror) else ("--port", str(port))
        why = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        raise ConfigError("cannot serve", [Problem("command line", None, field, value, why)]) from None
    return sock


def db_url(args: argparse.Namespace) -> str:
    if args.db:
        return str(args.db)
    args.data.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(args.data / 'registry.sqlite').resolve()}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from orchestrator.api.app import Settings, create_app

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        raise ConfigError(
            "refusing to serve without a token beyond loopback",
            [Problem("command line", None, "--host", args.host, f"give --token or set ${TOKEN_ENV}")],
        )
    if args.max_active < 1:
        problem = Problem("command line", None, "--max-active", str(args.max_active), "must be at least 1")
        raise ConfigError("bad --max-active", [problem])
    nightly = args.nightly or (DEFAULT_NIGHTLY if DEFAULT_NIGHTLY.is_file() else None)
    if args.no_nightly:
        nightly = None
    upcoming = _upcoming_night(nightly) if nightly is not None else None  # a bad file: one line, no start
    sock = _listen(args.host, args.port)
    try:
        url = db_url(args)
        settings = Settings(db_url=url, data_dir=args.data.resolve(), token=token, max_active=args.max_active)
        app = create_app(settings, nightly=nightly)
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))
        with _stopped_by_signals(server) as stopped:
            print(f"marathon control plane at http://{args.host}:{port}/ (registry {url})", flush=True)
            if upcoming is not None:
                print(f"nightly matrix {nightly}: next night at {upcoming}", flush=True)
            server.run(sockets=[sock])
    finally:
        sock.close()
    if stopped:
        print(f"marathon control plane stopped ({signal.Signals(stopped[0]).name})", flush=True)
    return 0


@contextmanager
def _stopped_by_signals(server: Any) -> Iterator[list[int]]:
    """SIGINT and SIGTERM end the server gracefully, even one that comes before uvicorn listens for them
    (uvicorn drains the server, then hands the signal back to the handler it found, which is this one): a
    stop asked for is exit 0, not a death by the signal."""
    stopped: list[int] = []

    def note(signum: int, _frame: Any) -> None:
        stopped.append(signum)
        server.should_exit = True

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _upcoming_night(path: Path) -> str:
    from datetime import UTC, datetime

    from orchestrator.api.nightly import load_nightly, upcoming_night

    return upcoming_night(load_nightly(path), now=datetime.now(UTC))


def _nightly(args: argparse.Namespace) -> int:
    from orchestrator.api.metrics import Metrics
    from orchestrator.api.nightly import load_nightly
    from orchestrator.api.registry import Registry
    from orchestrator.api.runs import RunManager

    config = load_nightly(args.config)
    url = db_url(args)
    manager = RunManager(
        registry=Registry(url), metrics=Metrics(), data_dir=args.data.resolve(), max_active=config.concurrency
    )
    manager.recover()
    stop = threading.Event()
    with _stopping_on_signals(stop):
        if args.once:
            return _night_now(manager, config, stop=stop, registry_url=url)
        return _nights_on_schedule(manager, config, path=args.config, db=url, stop=stop)


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (runs in progress are stopped, sealed and scored); a second one
    interrupts at once."""

    def handler(_signum: int, _frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _say_tick(tick: Any) -> None:
    from orchestrator.api.nightly import tick_line

    print(tick_line(tick), flush=True)
    if tick.kind == "ended" and tick.cell.error:
        r = tick.cell.request
        print(f"{r.app} {r.agent} seed {r.seed}: {tick.cell.error}", file=sys.stderr, flush=True)


def _night_now(manager: Any, config: Any, *, stop: threading.Event, registry_url: str) -> int:
    from orchestrator.api.nightly import matrix, new_night, night_header, run_matrix, summary_table

    night = new_night()
    total = len(matrix(config))
    print(f"{night_header(night, config)} (registry {registry_url})", flush=True)
    cells = run_matrix(manager, config, night=night, stop=stop, progress=_say_tick)
    print(summary_table(cells), flush=True)
    if stop.is_set():
        print(f"marathon: interrupted: {total - len(cells)} of {total} runs not started", file=sys.stderr)
        return 130
    return 1 if any(cell.failed for cell in cells) else 0


def _nights_on_schedule(manager: Any, config: Any, *, path: Path, db: str, stop: threading.Event) -> int:
    """The matrix on its cron trigger until a signal: a night in progress is stopped (its runs sealed and
    scored), then the process ends with 0."""
    from orchestrator.api.nightly import FOREGROUND_JOB_TABLE, next_run_at, start_scheduler, stop_scheduler

    scheduler = start_scheduler(manager, config_path=path, db_url=db, table=FOREGROUND_JOB_TABLE)
    try:
        print(f"nightly matrix {path}: cron {config.cron!r} ({config.timezone}); next night at "
              f"{next_run_at()}; Ctrl-C stops", flush=True)  # fmt: skip
        while not stop.wait(timeout=1.0):
            pass
    finally:
        stop_scheduler(scheduler, wait=True)
        manager.shutdown()
    print("nightly: stopped", flush=True)
    return 0
