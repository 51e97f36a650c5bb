"""The self-review APIs: ``kubectl auth can-i`` and ``kubectl auth whoami`` against the twin.

The twin knows one identity, the holder of its kubeconfig's token, and it is the cluster's administrator
(the token is the only credential the API accepts, and it may do everything). So every
SelfSubjectAccessReview is allowed, as a cluster-admin's is on a kube-apiserver, and the rules review
lists the ``*`` rules of the cluster-admin ClusterRole. Reviews are created, answered and not stored.
"""

from __future__ import annotations

from typing import Any

from orchestrator.errors import ApiStatusError

ADMIN = "twin-admin"  # the kubeconfig's user
ADMIN_GROUPS = ["system:masters", "system:authenticated"]
ALLOWED_BY = (
    'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
    'to Group "system:masters"'
)
# (group, version, plural, kind) of the review kinds the twin answers.
REVIEWS = (
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    ("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview"),
)


def discovery_entries(group: str, version: str) -> list[dict[str, Any]]:
    """The APIResourceList entries of the reviews in one group version: create-only, cluster-scoped."""
    return [
        {"name": plural, "singularName": "", "namespaced": False, "kind": kind, "verbs": ["create"]}
        for g, v, plural, kind in REVIEWS
        if (g, v) == (group, version)
    ]


def kind_of(group: str, version: str, rest: str) -> tuple[str, str] | None:
    """(apiVersion, kind) of the review a path names (``selfsubjectaccessreviews``), else None."""
    for g, v, plural, kind in REVIEWS:
        if (g, v, plural) == (group, version, rest.strip("/")):
            return f"{g}/{v}", kind
    return None


def answer(review_kind: tuple[str, str], body: Any) -> dict[str, Any]:
    """The created review of ``review_kind`` (from ``kind_of``) with its status."""
    api_version, kind = review_kind
    version = api_version.rsplit("/", 1)[-1]
    if not isinstance(body, dict) or body.get("kind", kind) != kind:
        raise ApiStatusError(
            400, "BadRequest", f'{kind} in version "{version}" cannot be handled as a {kind}: no {kind} body'
        )
    review: dict[str, Any] = {**body, "kind": kind, "apiVersion": api_version}
    review["metadata"] = {**(body.get("metadata") or {}), "creationTimestamp": None}
    if kind == "SelfSubjectAccessReview":
        spec = body.get("spec") or {}
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise ApiStatusError(
                422,
                "Invalid",
                f'{kind}.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
                '"null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
            )
        review["status"] = {"allowed": True, "reason": ALLOWED_BY}
    elif kind == "SelfSubjectRulesReview":
        review["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        review["status"] = {"userInfo": {"username": ADMIN, "groups": list(ADMIN_GROUPS)}}
    return review
