"""The responsible-artifact vocabulary: every KIND an artifact may have, and the canonical form of the
REFERENCE a catalog entry writes after it.

One closed list, shared by the catalog's grammar, the ``incident_report`` tool, the bundle's records and the
scorer (docs/metrics.md, "Responsible artifacts"; the reference forms are in fault_catalog/README.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
IMAGE_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"


@dataclass(frozen=True)
class ArtifactKind:
    """A KIND and the canonical REFERENCE a catalog entry writes after it.

    Named groups of ``pattern``: ``workload``, ``service`` and ``peer`` name services of the app's topology,
    ``node`` and ``zone`` its nodes, ``tag`` an image tag, ``flag`` a feature flag.
    """

    name: str
    form: str
    pattern: re.Pattern[str]


def _kind(name: str, form: str, pattern: str) -> ArtifactKind:
    return ArtifactKind(name, form, re.compile(pattern))


ARTIFACTS: tuple[ArtifactKind, ...] = (
    _kind("release", "release:<workload>@<tag>", rf"^(?P<workload>{NAME})@(?P<tag>{IMAGE_TAG})$"),
    _kind(
        "config",
        "config:<workload>/env/<NAME> | config:<workload>/port/<name> | config:<workload>/args",
        rf"^(?P<workload>{NAME})/(?:env/{ENV_NAME}|port/[a-z0-9-]+|args)$",
    ),
    _kind(
        "resources",
        "resources:<workload>/(requests|limits)/(cpu|memory)",
        rf"^(?P<workload>{NAME})/(?:requests|limits)/(?:cpu|memory)$",
    ),
    _kind("replicas", "replicas:<workload>", rf"^(?P<workload>{NAME})$"),
    _kind(
        "probe", "probe:<workload>/(readiness|liveness)", rf"^(?P<workload>{NAME})/(?:readiness|liveness)$"
    ),
    _kind(
        "service",
        "service:<service>/(targetPort|port|selector)",
        rf"^(?P<service>{NAME})/(?:targetPort|port|selector)$",
    ),
    _kind(
        "credentials",
        "credentials:<workload>/env/<NAME> | credentials:<workload>/secret/<name>"
        " | credentials:<workload>/args",
        rf"^(?P<workload>{NAME})/(?:env/{ENV_NAME}|secret/{NAME}|args)$",
    ),
    _kind("feature-flag", "feature-flag:<flag>", r"^(?P<flag>[A-Za-z][A-Za-z0-9_.-]*)$"),
    _kind(
        "network",
        "network:<from>-><to> | network:<target>",
        rf"^(?P<workload>{NAME})(?:->(?P<peer>{NAME}))?$",
    ),
    _kind("dns", "dns:<target>", rf"^(?P<workload>{NAME})$"),
    _kind("pod", "pod:<workload>", rf"^(?P<workload>{NAME})$"),
    _kind("cpu", "cpu:<workload>", rf"^(?P<workload>{NAME})$"),
    _kind("memory", "memory:<workload>", rf"^(?P<workload>{NAME})$"),
    _kind("io", "io:<workload>", rf"^(?P<workload>{NAME})$"),
    _kind(
        "node",
        "node:<node> | node:zone/<zone>",
        r"^(?:zone/(?P<zone>[A-Za-z0-9][A-Za-z0-9._-]*)|(?P<node>[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?))$",
    ),
)

# The kinds in the order the documentation lists them.
ARTIFACT_KINDS: tuple[str, ...] = tuple(kind.name for kind in ARTIFACTS)
ARTIFACT_GRAMMAR: dict[str, ArtifactKind] = {kind.name: kind for kind in ARTIFACTS}
# The kinds as prose writes them, for tool descriptions and prompts.
ARTIFACT_KIND_LIST = ", ".join(ARTIFACT_KINDS)
