"""A kubeconfig pointing kubectl and the official Python client at the twin's API server: its HTTPS URL,
the CA that signed its certificate, and the bearer token it accepts.

The token comes from the operating system's random source, one per twin: it is never derived from the
seed, so nothing that reproduces a run (its seed, its bundle) reproduces the credential.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from orchestrator.errors import ConfigError

CONTEXT = "twin"


def new_token() -> str:
    """A fresh bearer token for one twin: 256 bits from the OS, URL-safe."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Credentials:
    """What a client of one twin needs besides kubectl: where it serves, whom to trust, what to present."""

    server: str
    token: str = field(repr=False)
    ca_pem: bytes = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts the twin's CA, and only it."""
        return ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))


def kubeconfig(*, server: str, token: str, ca_pem: bytes, namespace: str = "default") -> dict[str, Any]:
    """The kubeconfig document (no side effects): one cluster, one token user, one current context."""
    authority = base64.b64encode(ca_pem).decode("ascii")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {"name": CONTEXT, "cluster": {"server": server, "certificate-authority-data": authority}}
        ],
        "users": [{"name": f"{CONTEXT}-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": f"{CONTEXT}-admin", "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: Path, credentials: Credentials, *, namespace: str = "default") -> Path:
    """Write the kubeconfig to ``path`` and return it. The file is owner-only from its creation (it holds
    the token) and replaces any earlier one whole, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = kubeconfig(
        server=credentials.server, token=credentials.token, ca_pem=credentials.ca_pem, namespace=namespace
    )
    text = yaml.safe_dump(document, sort_keys=False)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def read_credentials(path: Path) -> Credentials:
    """The server, CA and bearer token of the current context in the kubeconfig at ``path``."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        context = next(c["context"] for c in document["contexts"] if c["name"] == document["current-context"])
        cluster = next(c["cluster"] for c in document["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in document["users"] if u["name"] == context["user"])
        server, token = str(cluster["server"]), user["token"]
        ca_pem = base64.b64decode(cluster["certificate-authority-data"], validate=True)
    except (OSError, yaml.YAMLError, KeyError, TypeError, StopIteration, binascii.Error) as exc:
        raise ConfigError(f"{path}: not a twin's kubeconfig ({exc!r})") from exc
    if not isinstance(token, str) or not token:
        raise ConfigError(f"{path}: the current context's bearer token is empty")
    return Credentials(server=server, token=token, ca_pem=ca_pem)
