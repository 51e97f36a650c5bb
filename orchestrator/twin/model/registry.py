"""The twin's image registry: which image references exist and what each build does when it runs.

The base version of every service behaves normally; a code-fault build (an image tag from the catalog)
behaves as its catalog entry says; a build pushed into the cluster's registry namespace behaves as the
build it names; the general-purpose images of the public registry (``PUBLIC_IMAGES``, any tag: what an
operator or a client's own tests run beside the app) run as healthy containers of no app service, and
``pods/exec`` into one runs the command for real in a sandbox; any other reference does not exist
(ErrImagePull).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from orchestrator.catalog.faults import BuildBehaviour, CodeFault
from orchestrator.catalog.topology import Topology


@dataclass(frozen=True)
class Build:
    service: str
    tag: str
    behaviour: BuildBehaviour | None  # None: the base version, healthy
    log_message: str | None = None
    log_service: str | None = None


# Short names of utility images every public registry serves; none is the image of an app service, so an
# app's missing tag (a code fault's ErrImagePull) stays missing.
PUBLIC_IMAGES = frozenset({"busybox", "alpine", "debian", "ubuntu", "nginx", "python", "curl"})


@lru_cache(maxsize=4096)
def split_image(image: str) -> tuple[str, str]:
    """(short name, tag) of an image reference; the registry path and any digest are dropped."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    name, _, tag = last.partition(":")
    return name, tag or "latest"


class ImageRegistry:
    """Builds by (image short name, tag). Lookups are pure."""

    def __init__(self, topology: Topology, code_faults: Iterable[CodeFault] = ()) -> None:
        self._builds: dict[tuple[str, str], Build] = {}
        image_of: dict[str, str] = {}
        for service in topology.services:
            name, tag = split_image(service.image)
            image_of[service.name] = name
            self._builds[(name, tag)] = Build(service=service.name, tag=tag, behaviour=None)
            for sidecar in service.sidecars:
                self.allow(sidecar.image, service=service.name)
        for fault in code_faults:
            short = image_of.get(fault.target)
            if short is None:
                continue
            self._builds[(short, fault.inject.image_tag)] = Build(
                service=fault.target,
                tag=fault.inject.image_tag,
                behaviour=fault.inject.behaviour,
                log_message=fault.log.message,
                log_service=fault.log.service,
            )

    def allow(self, image: str, *, service: str = "") -> None:
        """Hold an image as a healthy build (sidecars, init containers, anything the manifests ship)."""
        name, tag = split_image(image)
        self._builds.setdefault((name, tag), Build(service=service, tag=tag, behaviour=None))

    def push(self, data: Mapping[str, str]) -> None:
        """Hold a pushed build: ``image`` runs as the build of the same image named by ``behaves-as``.

        ``data`` is a registry ConfigMap's data (``service``, ``tag``, ``image``, ``behaves-as``); one that
        names no known build is ignored, as a registry ignores a push it cannot resolve.
        """
        image, behaves_as = data.get("image", ""), data.get("behaves-as", "")
        name, tag = split_image(image)
        like = self._builds.get((name, behaves_as))
        if image and like is not None:
            self._builds.setdefault((name, tag), replace(like, tag=tag))

    def lookup(self, image: str) -> Build | None:
        """The build an image reference names, or None when no registry holds it."""
        name, tag = split_image(image)
        found = self._builds.get((name, tag))
        if found is None and name in PUBLIC_IMAGES:
            return Build(service="", tag=tag, behaviour=None)
        return found

    def __len__(self) -> int:
        return len(self._builds)
