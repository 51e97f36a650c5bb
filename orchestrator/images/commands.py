"""``marathon images build``: the code-fault images of an app, built from a checkout of its pinned source."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from orchestrator.errors import InputError, Problem

HELP = "build code-fault images from the apps' pinned upstream source"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("images", help=HELP)
    actions = parser.add_subparsers(dest="images_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="apply each code fault's change to a scratch copy of its service, run the service's own checks, "
        "docker build, then kind load or push; record the result in fault_catalog/<app>/images.json",
    )
    build.add_argument("--app", required=True, help="application, e.g. online-boutique")
    build.add_argument("--ids", nargs="+", required=True, metavar="ID", help="code fault entry ids")
    build.add_argument(
        "--source",
        type=Path,
        required=True,
        metavar="DIR",
        help="your checkout of the app's pinned upstream version (when missing, the commands that fetch it "
        "are printed); it is never modified",
    )
    where = build.add_mutually_exclusive_group()
    where.add_argument("--registry", metavar="R", help="push each image to this registry (host[:port])")
    where.add_argument("--kind-cluster", metavar="NAME", help="load each image into this Kind cluster")
    build.add_argument("--skip-docker", action="store_true", help="stop after the service's checks")
    build.add_argument(
        "--scratch", type=Path, metavar="DIR", help="keep the scratch copies here (default: a temp folder)"
    )
    build.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    build.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from orchestrator.catalog.loading import default_root
    from orchestrator.images.building import (
        Publish,
        build_image,
        checkout_commit,
        docker_unavailable,
        plan_builds,
        upstream_of,
    )
    from orchestrator.images.records import write_records
    from orchestrator.images.running import find_tool, run_command

    upstream = upstream_of(args.app)
    source: Path = args.source
    if not source.is_dir():
        for line in upstream.fetch_commands(source):
            print(line)
        why = f"no such directory; fetch {upstream.pinned()} with the commands above"
        raise InputError("images build", [Problem(str(source), None, "--source", "", why)])
    root: Path = args.root if args.root is not None else default_root()
    checkout = source.resolve()
    planned = plan_builds(args.app, args.ids, checkout=checkout, root=root)
    commit = checkout_commit(checkout, runner=run_command, which=find_tool)
    if commit is not None and commit != upstream.commit:
        print(f"note: {source} is at {commit}, not at the pinned {upstream.pinned()}")
    publish = Publish(registry=args.registry, kind_cluster=args.kind_cluster)
    with tempfile.TemporaryDirectory(prefix="marathon-images-") as temporary:
        scratch: Path = args.scratch if args.scratch is not None else Path(temporary)
        scratch.mkdir(parents=True, exist_ok=True)
        no_docker = docker_unavailable(
            skip_docker=args.skip_docker, runner=run_command, which=find_tool, cwd=scratch
        )
        if no_docker is not None:
            print(f"docker: {no_docker}; no image is built, the changes and the services' checks still run")
        records = [
            build_image(
                one,
                upstream=upstream,
                checkout=checkout,
                scratch=scratch,
                publish=publish,
                no_docker=no_docker,
                runner=run_command,
                which=find_tool,
                commit=commit,
                report=print,
            )
            for one in planned
        ]
    path = write_records(args.app, records, root=root)
    print(f"recorded {len(records)} image(s) in {path}")
    failed = [record.entry_id for record in records if record.failed]
    if failed:
        print(f"marathon: error: images build: a step failed for {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
