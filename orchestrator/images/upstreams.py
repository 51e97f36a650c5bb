"""Where each app's source comes from, pinned, and how its service images are built from it.

Facts about the upstream projects (repository, version, build layout), not their code.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Scope(StrEnum):
    """How much of the checkout a build needs."""

    SERVICE = "service"  # the service's folder alone (its Dockerfile copies only from there)
    CHECKOUT = "checkout"  # the whole checkout (Dockerfiles or build files reach outside the service)


@dataclass(frozen=True)
class Upstream:
    """An app's upstream source at the version its manifests and catalog describe."""

    repository: str
    version: str
    commit: str
    # What the scratch copy holds, and which folder docker builds from.
    copy: Scope
    context: Scope
    # Run in the checkout before ``docker build`` ({service_dir} is the service folder, relative).
    prebuild: tuple[str, ...] = ()
    note: str = ""

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}"

    def pinned(self) -> str:
        return f"{self.repository}@{self.version} ({self.commit})"

    def fetch_commands(self, dest: Path) -> tuple[str, ...]:
        """The commands that fetch the pinned source into ``dest`` (printed for the user, never run)."""
        where = shlex.quote(str(dest))
        return (f"git clone {self.url} {where}", f"git -C {where} checkout {self.commit}")


UPSTREAMS: dict[str, Upstream] = {
    "online-boutique": Upstream(
        repository="GoogleCloudPlatform/microservices-demo",
        version="v0.10.6",
        commit="5b3a712ab85ccb8f6f7cd5b720d36ba9a8d041eb",
        copy=Scope.SERVICE,
        context=Scope.SERVICE,
        note="each src/<service>/ (cartservice: src/cartservice/src/) builds alone from its own Dockerfile",
    ),
    "astronomy-shop": Upstream(
        repository="open-telemetry/opentelemetry-demo",
        version="2.2.0",
        commit="b74a7bc7bbe66099c61951f42b24dab8b6f02d18",
        copy=Scope.CHECKOUT,
        context=Scope.CHECKOUT,
        note="the Dockerfiles copy ./src/<service>/ and ./pb/ from the repository root, the build context",
    ),
    "train-ticket": Upstream(
        repository="FudanSELab/train-ticket",
        version="v1.0.0+hotfix",
        commit="313886e99befb94be6cd45f085c98e0019f59829",
        copy=Scope.CHECKOUT,
        context=Scope.SERVICE,
        prebuild=("mvn", "-q", "-Dmaven.test.skip=true", "-pl", "{service_dir}", "-am", "package"),
        note="Maven modules of one reactor (ts-common); each ts-*/Dockerfile adds the jar from target/",
    ),
}
