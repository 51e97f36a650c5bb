"""``marathon nightly --executor job`` (a night's matrix as one Kubernetes Indexed Job) and ``marathon nightly
cell`` (what each of the Job's pods runs). Importing this module imports nothing heavy: ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, Problem

INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_NAMESPACE = "marathon"
DEFAULT_TIMEOUT_S = 24 * 3600.0


JOB_OPTIONS = ("kubeconfig", "image", "bundles", "claim")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Extend ``marathon nightly`` (registered before this by ``orchestrator.api.commands``): the executor
    options, ``--executor job`` running the night here, and the ``cell`` subcommand."""
    nightly = subparsers.choices["nightly"]
    local = nightly.get_default("func")

    def run(args: argparse.Namespace) -> int:
        if args.executor == "job":
            return night_as_job(args)
        given = [f"--{option}" for option in JOB_OPTIONS if getattr(args, option) is not None]
        if given:
            problems = [Problem("command line", None, o, "", "only with --executor job") for o in given]
            raise ConfigError("options of the job executor given to the local one", problems)
        code: int = local(args)
        return code

    nightly.set_defaults(func=run)
    add_executor_arguments(nightly)


def add_executor_arguments(nightly: argparse.ArgumentParser) -> None:
    """The executor options of ``marathon nightly`` and its ``cell`` subcommand."""
    group = nightly.add_argument_group(
        "executor", "where the matrix's marathons run: here, one worker process each (local), or as the "
        "pods of one Kubernetes Indexed Job, one cell per pod (job; with --once)",
    )  # fmt: skip
    group.add_argument("--executor", choices=("local", "job"), default="local", help="local or job")
    group.add_argument("--kubeconfig", type=Path, default=None, help="job: the cluster to run the Job on")
    group.add_argument("--image", default=None, help="job: the marathon image the cells' pods run")
    group.add_argument("--bundles", type=Path, default=None, help="job: the directory the cells write their "
                       "bundles to, on the nodes (a hostPath) and here; with --claim, where that volume is "
                       "mounted here")  # fmt: skip
    group.add_argument("--claim", default=None, help="job: a PersistentVolumeClaim to write the bundles to "
                       "instead of the nodes' --bundles directory")  # fmt: skip
    group.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="job: the Job's namespace")
    group.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                       help="job: seconds to wait for the Job to complete or fail")  # fmt: skip
    sub = nightly.add_subparsers(dest="nightly_command", metavar="{cell}", title="subcommands")
    cell = sub.add_parser(
        "cell", help="run one cell of a matrix file (what a pod of the nightly Job runs)",
        description="Run cell N of a matrix file (the nightly Job's ConfigMap) into OUT/N/: the twin "
        "marathon the local executor would run, its sealed bundle and score.json.",
    )  # fmt: skip
    cell.add_argument("--matrix", type=Path, required=True, help="the matrix file (JSON: its cells)")
    cell.add_argument("--out", type=Path, required=True, help="the directory the cell's run directory is "
                      "made in, as OUT/N")  # fmt: skip
    cell.add_argument("--index", type=int, default=None,
                      help=f"the cell to run (default: ${INDEX_ENV}, which an Indexed Job gives each pod)")
    cell.set_defaults(func=_cell)


def cell_index(given: int | None, environ: Mapping[str, str]) -> int:
    """The cell to run: ``--index``, else ``$JOB_COMPLETION_INDEX``; ``ConfigError`` when neither says."""
    if given is not None:
        return given
    value = environ.get(INDEX_ENV)
    if value is None:
        why = f"give --index N or set ${INDEX_ENV} (an Indexed Job's pod has it)"
        raise ConfigError("no cell to run", [Problem("command line", None, "--index", "", why)])
    if not value.strip().isdigit():
        why = "not a cell index (a non-negative integer)"
        raise ConfigError("no cell to run", [Problem("environment", None, f"${INDEX_ENV}", value, why)])
    return int(value)


def _cell(args: argparse.Namespace) -> int:
    index = cell_index(args.index, os.environ)
    from orchestrator.api.job_executor import run_cell
    from orchestrator.run.commands import print_result

    return print_result(run_cell(args.matrix, out=args.out, index=index))


def _required(args: argparse.Namespace) -> None:
    problems = [
        Problem("command line", None, option, "", "required with --executor job")
        for option, value in (("--kubeconfig", args.kubeconfig), ("--image", args.image),
                              ("--bundles", args.bundles))
        if value is None
    ]  # fmt: skip
    if not args.once:
        problems.append(Problem("command line", None, "--once", "", "--executor job runs one night now"))
    if problems:
        raise ConfigError("cannot run the matrix as a Job", problems)


def night_as_job(args: argparse.Namespace) -> int:
    """One night now, as one Indexed Job: create it, wait for it, register what its cells left."""
    _required(args)
    from orchestrator.api.commands import db_url
    from orchestrator.api.job_executor import collect, job_documents, job_name, run_as_job
    from orchestrator.api.nightly import load_nightly, matrix, new_night, night_header, summary_table
    from orchestrator.api.registry import Registry
    from orchestrator.cluster.client import KubeClient
    from orchestrator.errors import ClusterError

    config = load_nightly(args.config)
    cells = matrix(config)
    night = new_night()
    bundles = args.bundles.resolve()
    documents = job_documents(
        cells, night=night, image=args.image, namespace=args.namespace, bundles_path=bundles,
        claim_name=args.claim, parallelism=config.concurrency,
    )  # fmt: skip
    registry = Registry(db_url(args))
    try:
        client = KubeClient.from_kubeconfig(args.kubeconfig)
    except ClusterError as exc:
        why = str(exc).removeprefix(f"{args.kubeconfig}: ")
        problem = Problem("command line", None, "--kubeconfig", str(args.kubeconfig), why)
        raise ConfigError("cannot run the matrix as a Job", [problem]) from None
    name = job_name(night)
    print(f"{night_header(night, config)}: Job {args.namespace}/{name} (registry {db_url(args)})", flush=True)
    try:
        outcome = run_as_job(client, documents, timeout_s=args.timeout, progress=_say_job)
    finally:
        client.close()
    print(f"job {args.namespace}/{name}: {outcome.status}", flush=True)
    ran = collect(bundles / name, registry, cells=cells, night=night, data_dir=args.data.resolve(),
                  job=f"{args.namespace}/{name}")  # fmt: skip
    print(summary_table(ran), flush=True)
    return 0 if outcome.status == "Complete" and not any(cell.failed for cell in ran) else 1


def _say_job(job: dict[str, Any]) -> None:
    status = job.get("status") or {}
    print(f"job {job['metadata']['name']}: {status.get('active', 0)} active, {status.get('succeeded', 0)} "
          f"succeeded, {status.get('failed', 0)} failed; completed indexes "
          f"{status.get('completedIndexes') or '-'}", flush=True)  # fmt: skip
