"""``marathon manifests render``: write each app's Kubernetes manifests from its topology, or check them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.catalog.apps import REPOSITORY_ROOT, app_names
from orchestrator.catalog.manifests import app_manifest_path, render_yaml
from orchestrator.catalog.topologies import load_topology


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("manifests", help="render the apps' Kubernetes manifests from topologies")
    commands = parser.add_subparsers(dest="manifests_command", metavar="ACTION", required=True)
    render = commands.add_parser(
        "render", help="write manifests/<app>/app.yaml from manifests/<app>/topology.yaml"
    )
    render.add_argument("--app", default=None, help="one application (default: every app with a topology)")
    render.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a committed file is out of date"
    )
    render.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    render.set_defaults(func=_render)


def _render(args: argparse.Namespace) -> int:
    root: Path = args.root or REPOSITORY_ROOT
    apps = (args.app,) if args.app else app_names(root=root)
    stale = []
    for app in apps:
        text = render_yaml(load_topology(app, root=root))
        path = app_manifest_path(app, root=root)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            print(f"up to date: {path}")
        elif args.check:
            stale.append(path)
            print(f"out of date: {path} (run `marathon manifests render --app {app}`)", file=sys.stderr)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 1 if stale else 0
