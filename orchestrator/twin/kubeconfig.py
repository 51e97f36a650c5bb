"""A kubeconfig pointing kubectl and the official Python client at the twin's API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONTEXT = "twin"


def kubeconfig(*, server: str, namespace: str = "default", token: str = "twin-admin-token") -> dict[str, Any]:
    """The kubeconfig document (no side effects): one cluster, one token user, one current context."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": f"{CONTEXT}-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": f"{CONTEXT}-admin", "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
    }


def write_kubeconfig(
    path: Path, *, server: str, namespace: str = "default", token: str = "twin-admin-token"
) -> Path:
    """Write the kubeconfig to ``path`` (owner-only permissions, as kubectl keeps its own) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig(server=server, namespace=namespace, token=token), sort_keys=False)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path
