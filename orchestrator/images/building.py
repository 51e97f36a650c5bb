"""The code-fault image pipeline: for each entry, a scratch copy of its service at the pinned version with
the entry's change applied, the service's own checks, ``docker build``, then ``kind load`` or a push.

Every program runs through one ``Runner``; a step that cannot run (a tool or the Docker engine missing) is
skipped with its reason, and every step lands in the entry's record.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.errors import InputError, Problem
from orchestrator.images.changes import changed_text, service_folder, sha256_hex
from orchestrator.images.records import ImageRecord, Status, Step
from orchestrator.images.running import Runner, ToolFinder
from orchestrator.images.toolchains import Check, service_checks
from orchestrator.images.upstreams import UPSTREAMS, Scope, Upstream

Report = Callable[[str], None]


@dataclass(frozen=True)
class Publish:
    """Where a built image goes: a registry to push to, or a Kind cluster to load it into (or neither)."""

    registry: str | None = None
    kind_cluster: str | None = None


@dataclass(frozen=True)
class PlannedBuild:
    """One entry, checked against the checkout: its change applies, its service folder is known."""

    entry: CodeFault
    folder: str
    before: bytes
    after: bytes
    # The image repository the app's Deployment pulls (the release keeps it and changes the tag).
    repository: str

    @property
    def image(self) -> str:
        return f"{self.entry.target}:{self.entry.inject.image_tag}"


def upstream_of(app: str) -> Upstream:
    try:
        return UPSTREAMS[app]
    except KeyError:
        known = ", ".join(sorted(UPSTREAMS))
        problem = Problem("--app", None, "", app, f"no pinned upstream source for this app; known: {known}")
        raise InputError("images build", [problem]) from None


def plan_builds(
    app: str, ids: Sequence[str], *, checkout: Path, root: Path | None = None
) -> list[PlannedBuild]:
    """Check every entry against the checkout before anything runs; the first refusal is raised (one line)."""
    catalog = load_catalog(app, root=root)
    services = {service.name: service for service in load_topology(app, root=root).services}
    planned: list[PlannedBuild] = []
    for entry_id in dict.fromkeys(ids):
        entry = catalog.by_id.get(entry_id)
        if not isinstance(entry, CodeFault):
            kind = "no such entry" if entry is None else f"a {entry.mechanism} fault"
            why = f"{kind}; only code faults have images"
            raise InputError("images build", [Problem(f"fault_catalog/{app}", None, "--ids", entry_id, why)])
        deployed = services[entry.target].image if entry.target in services else entry.target
        planned.append(plan_build(entry, checkout=checkout, deployed_image=deployed))
    return planned


def plan_build(entry: CodeFault, *, checkout: Path, deployed_image: str) -> PlannedBuild:
    """The entry's change applied to its file's text (in memory), and its service folder; refused in one
    line when the file, its service's Dockerfile or exactly one occurrence of ``before`` is missing."""
    folder = service_folder(entry, checkout=checkout)
    path = entry.inject.source.file
    before = (checkout / path).read_bytes()
    try:
        text = before.decode("utf-8")
    except UnicodeDecodeError:
        problem = Problem(path, None, "inject.source.file", "", "not UTF-8 text")
        raise InputError(f"entry {entry.id}", [problem]) from None
    after = changed_text(entry, text=text, path=path).encode("utf-8")
    return PlannedBuild(entry, folder.as_posix(), before, after, _repository(deployed_image))


def docker_unavailable(*, skip_docker: bool, runner: Runner, which: ToolFinder, cwd: Path) -> str | None:
    """Why no image can be built here, or None when a Docker engine answers."""
    if skip_docker:
        return "--skip-docker given"
    if which("docker") is None:
        return "no docker program on PATH"
    outcome = runner(("docker", "info", "--format", "{{.ServerVersion}}"), cwd)
    if not outcome.ok:
        return f"no Docker engine answers (docker info: {outcome.last_line()})"
    return None


def checkout_commit(checkout: Path, *, runner: Runner, which: ToolFinder) -> str | None:
    """The commit the checkout is at, when it is a git checkout and git is installed."""
    if not (checkout / ".git").exists() or which("git") is None:
        return None
    outcome = runner(("git", "rev-parse", "HEAD"), checkout)
    return (outcome.stdout.strip() or None) if outcome.ok else None


@dataclass
class _Build:
    """The steps of one entry's build as they happen."""

    planned: PlannedBuild
    report: Report
    steps: list[Step]

    def step(self, name: str, status: Status, detail: str, command: str = "") -> None:
        self.steps.append(Step(name, status, detail, command))
        shown = f" ({command})" if command else ""
        self.report(f"{self.planned.entry.id}: {name}: {status}{shown}: {detail}")


def build_image(
    planned: PlannedBuild,
    *,
    upstream: Upstream,
    checkout: Path,
    scratch: Path,
    publish: Publish,
    no_docker: str | None,
    runner: Runner,
    which: ToolFinder,
    commit: str | None = None,
    report: Report = lambda line: None,
) -> ImageRecord:
    """Copy, change, check, build and publish one entry; the record of every step, failed ones included."""
    entry = planned.entry
    build = _Build(planned, report, [])
    copy_root = scratch / entry.id
    _copy(checkout, copy_root, folder=planned.folder if upstream.copy is Scope.SERVICE else ".")
    (copy_root / entry.inject.source.file).write_bytes(planned.after)
    where = "service folder" if upstream.copy is Scope.SERVICE else "checkout"
    build.step("change", "ran", f"{entry.inject.source.file} changed in a scratch copy of the {where}")
    checked = all(
        _run_check(build, check, copy_root=copy_root, runner=runner, which=which)
        for check in _checks(planned, copy_root)
    )
    built, digest, published = False, None, None
    if not checked:
        build.step("build", "skipped", "the service's own checks failed; no image built")
    elif no_docker is not None:
        build.step("build", "skipped", f"{no_docker}; no image built")
    else:
        built, digest = _docker_build(
            build, upstream=upstream, copy_root=copy_root, runner=runner, which=which
        )
    if not built:
        build.step("publish", "skipped", "no image was built")
    else:
        published = _publish(build, publish=publish, copy_root=copy_root, runner=runner, which=which)
    return ImageRecord(
        entry_id=entry.id,
        entry_hash=entry.content_hash(),
        service=entry.target,
        pinned_source=upstream.pinned(),
        checkout_commit=commit,
        source_file=entry.inject.source.file,
        source_sha256_before=sha256_hex(planned.before),
        source_sha256_after=sha256_hex(planned.after),
        image=planned.image,
        image_tag=entry.inject.image_tag,
        digest=digest,
        published=published,
        steps=tuple(build.steps),
    )


def _repository(image: str) -> str:
    return image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image


def _copy(checkout: Path, copy_root: Path, *, folder: str) -> None:
    if copy_root.exists():
        shutil.rmtree(copy_root)
    ignore = shutil.ignore_patterns(".git")
    shutil.copytree(checkout / folder, copy_root / folder, symlinks=True, ignore=ignore)


def _checks(planned: PlannedBuild, copy_root: Path) -> tuple[Check, ...]:
    service = copy_root / planned.folder
    return service_checks(service, copy_root=copy_root, folder=planned.folder, python=sys.executable)


def _run_check(build: _Build, check: Check, *, copy_root: Path, runner: Runner, which: ToolFinder) -> bool:
    """Run one check; a missing tool is a skip (recorded), a failing check stops the build."""
    folder = copy_root / check.folder
    command = check.shown()
    if check.tool.startswith("./"):
        present = (folder / check.tool).is_file()
    else:
        present = which(check.tool) is not None
    if not present:
        build.step(check.name, "skipped", f"{Path(check.tool).name} is not installed", command)
        return True
    if check.module is not None and importlib.util.find_spec(check.module) is None:
        build.step(check.name, "skipped", f"the {check.module} module is not installed", command)
        return True
    outcome = runner(check.argv, folder)
    if not outcome.ok:
        build.step(check.name, "failed", outcome.last_line(), command)
        return False
    build.step(check.name, "ran", f"passed in {check.folder}", command)
    return True


def _docker_build(
    build: _Build, *, upstream: Upstream, copy_root: Path, runner: Runner, which: ToolFinder
) -> tuple[bool, str | None]:
    """Prebuild (if the app needs one) and ``docker build``: whether the image was built, and its id."""
    planned = build.planned
    if upstream.prebuild:
        argv = tuple(part.replace("{service_dir}", planned.folder) for part in upstream.prebuild)
        if which(argv[0]) is None:
            why = f"{argv[0]} is not installed (it packages what the Dockerfile adds)"
            build.step("build", "skipped", why)
            return False, None
        outcome = runner(argv, copy_root)
        if not outcome.ok:
            build.step("prebuild", "failed", outcome.last_line(), " ".join(argv))
            return False, None
        build.step("prebuild", "ran", "packaged", " ".join(argv))
    context = planned.folder if upstream.context is Scope.SERVICE else "."
    dockerfile = (Path(planned.folder) / "Dockerfile").relative_to(context).as_posix()
    tags = dict.fromkeys((planned.image, f"{planned.repository}:{planned.entry.inject.image_tag}"))
    argv = ("docker", "build", *(part for tag in tags for part in ("-t", tag)), "-f", dockerfile, ".")
    outcome = runner(argv, copy_root / context)
    if not outcome.ok:
        build.step("build", "failed", outcome.last_line(), " ".join(argv))
        return False, None
    inspect = runner(("docker", "image", "inspect", "--format", "{{.Id}}", planned.image), copy_root)
    digest = (inspect.stdout.strip() or None) if inspect.ok else None
    build.step("build", "ran", f"built {', '.join(tags)} ({digest or 'id unknown'})", " ".join(argv))
    return True, digest


def _publish(
    build: _Build, *, publish: Publish, copy_root: Path, runner: Runner, which: ToolFinder
) -> str | None:
    planned = build.planned
    if publish.kind_cluster is not None:
        if which("kind") is None:
            build.step("publish", "skipped", "kind is not installed")
            return None
        image = f"{planned.repository}:{planned.entry.inject.image_tag}"
        argv = ("kind", "load", "docker-image", image, "--name", publish.kind_cluster)
        return _published(build, argv, copy_root, runner, done=f"kind:{publish.kind_cluster}/{image}")
    if publish.registry is not None:
        remote = f"{publish.registry.rstrip('/')}/{planned.image}"
        for command in (("docker", "tag", planned.image, remote), ("docker", "push", remote)):
            if _published(build, command, copy_root, runner, done=remote) is None:
                return None
        digests = ("docker", "image", "inspect", "--format", "{{index .RepoDigests 0}}", remote)
        inspect = runner(digests, copy_root)
        return (inspect.stdout.strip() or remote) if inspect.ok else remote
    build.step("publish", "skipped", "neither --registry nor --kind-cluster given")
    return None


def _published(build: _Build, argv: tuple[str, ...], cwd: Path, runner: Runner, *, done: str) -> str | None:
    outcome = runner(argv, cwd)
    command = " ".join(argv)
    if not outcome.ok:
        build.step("publish", "failed", outcome.last_line(), command)
        return None
    build.step("publish", "ran", done, command)
    return done
