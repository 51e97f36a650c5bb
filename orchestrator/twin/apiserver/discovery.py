"""Discovery documents of the twin's API server: what kubectl and the Python client read first."""

from __future__ import annotations

from typing import Any

from orchestrator.twin.apiserver import reviews
from orchestrator.twin.resources import KUBERNETES_VERSION, RESOURCE_TYPES, ResourceType

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "eviction": ["create"],
}


def version() -> dict[str, Any]:
    major, minor, _patch = KUBERNETES_VERSION.lstrip("v").split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "a78aa47129b8539636eb86a9d00e31b2720fe06b",
        "gitTreeState": "clean",
        "buildDate": "2024-12-10T11:36:21Z",
        "goVersion": "go1.22.9",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    }


def groups() -> list[tuple[str, str]]:
    """(group, version) pairs of the named groups, in discovery order."""
    seen: list[tuple[str, str]] = []
    for rtype in RESOURCE_TYPES:
        if rtype.group and (rtype.group, rtype.version) not in seen:
            seen.append((rtype.group, rtype.version))
    for group, group_version, _plural, _kind in reviews.REVIEWS:
        if (group, group_version) not in seen:
            seen.append((group, group_version))
    return seen


def api_group(group: str, group_version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{group_version}", "version": group_version}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {k: v for k, v in api_group(g, v).items() if k not in ("kind", "apiVersion")} for g, v in groups()
        ],
    }


def _entry(rtype: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    return entry


def resource_list(group: str, group_version: str) -> dict[str, Any] | None:
    """The APIResourceList of one group version, or None when the twin does not serve it."""
    resources: list[dict[str, Any]] = []
    for rtype in RESOURCE_TYPES:
        if rtype.group != group or rtype.version != group_version:
            continue
        resources.append(_entry(rtype))
        for sub in rtype.subresources:
            item: dict[str, Any] = {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": _SUBRESOURCE_VERBS[sub],
            }
            if sub == "scale":
                item.update({"group": "autoscaling", "version": "v1", "kind": "Scale"})
            if sub == "eviction":
                item.update({"group": "policy", "version": "v1", "kind": "Eviction"})
            resources.append(item)
    resources.extend(reviews.discovery_entries(group, group_version))
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{group_version}" if group else group_version,
        "resources": resources,
    }
