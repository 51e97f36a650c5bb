"""The deployed source of each service, agent patches to it, and the images built from them.

Each service's base snapshot is the source tree ``codebase`` generates for it from the topology: a module
per endpoint, per dependency and per background job, its configuration loading, main module and build files.
The ``before`` code of every catalog code fault of the service stands in the module its ``file`` names (or
the module of that file name), placed as any code of its kind would be. A fault build (an image tag of a
code-fault entry) is the same snapshot with that ``before`` replaced by its ``after``, and a changelog line
from its release note, as an ordinary release would carry.

``SourceStore`` keeps the patches and builds of one run in memory. A build behaves as the service's base
version when its file no longer contains the defect (``after``) and does contain the original code
(``before``), compared line by line without indentation; otherwise it behaves as the fault build it was
derived from. ``registry_configmap`` is the object that publishes a build to the cluster's image registry:
one ConfigMap per build in the namespace ``marathon-registry`` (hidden from agents), with data ``service``,
``tag``, ``image`` (the reference ``submit_patch`` sets), ``behaves-as`` (the base tag when the patch repairs
the defect, else the fault build's tag it was derived from) and ``derived-from``. The twin runs ``image`` as
the build ``behaves-as`` names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.topology import Topology
from orchestrator.errors import InputError
from orchestrator.interface.codebase import Code, Conventions, Site, Tree, codebase
from orchestrator.interface.diffs import apply_diff

REGISTRY_NAMESPACE = "marathon-registry"
CHANGELOG = "CHANGELOG.md"


class SourceError(InputError):
    """A source path, patch or image the agent named does not exist or cannot be used."""


def split_image(image: str) -> tuple[str, str]:
    """(repository without the tag, tag) of an image reference (``latest`` when it has none)."""
    ref = image.split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    name, _, tag = last.partition(":")
    return (f"{head}/{name}" if head else name), tag or "latest"


@dataclass(frozen=True)
class Snapshot:
    service: str
    tag: str
    files: dict[str, str]
    fault: CodeFault | None  # the defect this snapshot descends from (None: base or a repaired build)


@dataclass(frozen=True)
class Patch:
    patch_id: str
    service: str
    path: str
    derived_from: str  # the tag of the snapshot the diff was applied to
    files: dict[str, str]
    fault: CodeFault | None


@dataclass(frozen=True)
class Build:
    service: str
    tag: str
    image: str
    derived_from: str
    behaves_as: str
    fixes: bool
    files: dict[str, str]
    fault: CodeFault | None


@dataclass
class SourceStore:
    """The source snapshots of one application, and the patches and builds of one run."""

    topology: Topology
    faults: tuple[CodeFault, ...]
    conventions: Conventions
    patches: dict[str, Patch] = field(default_factory=dict)
    builds: dict[tuple[str, str], Build] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _trees: dict[str, Tree] = field(default_factory=dict)

    @classmethod
    def of(cls, topology: Topology, faults: Iterable[object]) -> SourceStore:
        names = set(topology.service_names)
        chosen = tuple(f for f in faults if isinstance(f, CodeFault) and f.target in names)
        return cls(
            topology=topology, faults=chosen, conventions=Conventions.infer([_code(f) for f in chosen])
        )

    def base_tag(self, service: str) -> str:
        return split_image(self.topology.service(service).image)[1]

    def _faults_of(self, service: str) -> list[CodeFault]:
        return [f for f in self.faults if f.target == service]

    def tree(self, service: str) -> Tree:
        """The generated source of ``service`` with its faults' original code in place (cached)."""
        if service not in self._trees:
            codes = [_code(f) for f in self._faults_of(service)]
            self._trees[service] = codebase(self.topology, service, self.conventions, codes)
        return self._trees[service]

    def site(self, fault: CodeFault) -> Site:
        """Where the code ``fault`` changes stands in its service's source."""
        return self.tree(fault.target).sites[fault.id]

    def base_files(self, service: str) -> dict[str, str]:
        """The base snapshot of ``service``: its generated source tree, plus a changelog."""
        files = dict(self.tree(service).files)
        files[CHANGELOG] = f"# {service}\n\n- {self.base_tag(service)}: current release\n"
        return files

    def snapshot(self, service: str, image: str) -> Snapshot:
        """The source deployed as ``image`` of ``service``; ``SourceError`` when no source is published."""
        tag = split_image(image)[1]
        build = self.builds.get((service, tag))
        if build is not None:
            return Snapshot(service, tag, dict(build.files), build.fault)
        base = self.base_files(service)
        if tag == self.base_tag(service):
            return Snapshot(service, tag, base, None)
        for fault in self._faults_of(service):
            if fault.inject.image_tag == tag:
                site = self.site(fault)
                files = dict(base)
                files[site.path] = files[site.path].replace(
                    site.text, site.spelled(fault.inject.source.after), 1
                )
                files[CHANGELOG] = (
                    f"# {service}\n\n- {tag}: {fault.inject.release_note}\n"
                    f"- {self.base_tag(service)}: previous release\n"
                )
                return Snapshot(service, tag, files, fault)
        raise SourceError(f"no source is published for image {image!r} of {service}")

    def propose(self, *, service: str, image: str, path: str, diff: str) -> Patch:
        """Apply ``diff`` to ``path`` of the deployed snapshot and keep the result as a new patch."""
        snapshot = self.snapshot(service, image)
        path = path.lstrip("/")
        if path not in snapshot.files:
            raise SourceError(f"{service} has no file {path!r}; files: {', '.join(sorted(snapshot.files))}")
        files = dict(snapshot.files)
        files[path] = apply_diff(files[path], diff, path=path)
        patch_id = f"{service}-patch-{len(self.patches) + 1}"
        patch = Patch(patch_id, service, path, snapshot.tag, files, snapshot.fault)
        self.patches[patch_id] = patch
        return patch

    def build(self, *, service: str, patch_id: str, image: str) -> Build:
        """Build ``patch_id`` into a new tag of ``image``'s repository (``<derived tag>-p<n>``)."""
        patch = self.patches.get(patch_id)
        if patch is None or patch.service != service:
            raise SourceError(f"no patch {patch_id!r} for {service}; propose_patch returns patch ids")
        count = self._counts.get(service, 0) + 1
        self._counts[service] = count
        tag = f"{patch.derived_from}-p{count}"
        repository = split_image(image)[0]
        fixes = patch.fault is not None and _repairs(patch.files, self.site(patch.fault), patch.fault)
        if patch.fault is None or fixes:
            behaves_as, fault = self.base_tag(service), None
        else:
            behaves_as, fault = patch.fault.inject.image_tag, patch.fault
        build = Build(
            service, tag, f"{repository}:{tag}", patch.derived_from, behaves_as, fixes, patch.files, fault
        )
        self.builds[(service, tag)] = build
        return build

    def built(self, service: str, image: str) -> Build | None:
        """The build ``image`` names, when this run built it for ``service``."""
        repository, tag = split_image(image)
        build = self.builds.get((service, tag))
        return build if build is not None and split_image(build.image)[0] == repository else None


def _code(fault: CodeFault) -> Code:
    return Code(fault.id, fault.target, fault.inject.source.file, fault.inject.source.before)


def _repairs(files: dict[str, str], site: Site, fault: CodeFault) -> bool:
    text = files.get(site.path, "")
    return _contains(text, site.text) and not _contains(text, fault.inject.source.after)


def _contains(text: str, code: str) -> bool:
    """Whether ``code`` stands in ``text``, line by line, whatever the indentation (no side effects)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    wanted = [line.strip() for line in code.splitlines() if line.strip()]
    return any(lines[i : i + len(wanted)] == wanted for i in range(len(lines) - len(wanted) + 1))


def registry_name(service: str, tag: str) -> str:
    """The ConfigMap name of a pushed build: ``build-<service>-<tag>`` in DNS form (no side effects)."""
    return f"build-{service}-{tag}".lower().replace("_", "-")[:253]


def registry_configmap(build: Build) -> dict[str, Any]:
    """The ConfigMap that publishes ``build`` to the twin's image registry (no side effects)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": registry_name(build.service, build.tag),
            "namespace": REGISTRY_NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "marathon", "marathon/registry": "build"},
        },
        "data": {
            "service": build.service,
            "tag": build.tag,
            "image": build.image,
            "behaves-as": build.behaves_as,
            "derived-from": build.derived_from,
        },
    }
