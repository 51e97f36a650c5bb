"""Redis and Valkey authentication as the server decides it: its own settings against what a client presents.

The server's settings come from its container's command line (``redis-server --requirepass X``, ``--user
NAME RULES...``; Valkey's image also appends ``VALKEY_EXTRA_FLAGS``), the client's from the address it dials
(``host:port,user=U,password=P`` in the StackExchange.Redis form, or ``redis://U:P@host:port``). The rules are
the server's: a connection that sends no AUTH is logged in as ``default`` only while that user is enabled and
needs no password, else every command is answered ``NOAUTH``; ``AUTH <password>`` is refused outright while
the default user needs none; any other mismatch is ``WRONGPASS``. No side effects anywhere here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from orchestrator.twin.model.state import ContainerSpec

# How the server refuses a client: the reply's key suffix in ``messages.AUTH_DETAILS``.
Refusal = Literal["noauth", "wrongpass", "password"]

EXTRA_FLAGS_ENV = {"valkey": "VALKEY_EXTRA_FLAGS"}  # an env var the image's entrypoint appends to the command


@dataclass(frozen=True)
class User:
    enabled: bool
    nopass: bool
    passwords: frozenset[str]

    def accepts(self, password: str) -> bool:
        return self.enabled and (self.nopass or password in self.passwords)


# A server started without any authentication setting: ``default`` is on and needs no password.
OPEN_DEFAULT = User(enabled=True, nopass=True, passwords=frozenset())
_RESET = User(enabled=False, nopass=False, passwords=frozenset())


@dataclass(frozen=True)
class Credentials:
    """What a client presents; ``None`` for both: it sends no AUTH at all."""

    user: str | None = None
    password: str | None = None

    @property
    def sends_auth(self) -> bool:
        return self.user is not None or self.password is not None


def directives(argv: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The ``--name value...`` directives of a server command line, in order, as the server reads them: each
    ``--name`` opens a directive and the words up to the next one are its arguments; the binary and a config
    file before the first directive are skipped."""
    found: list[tuple[str, list[str]]] = []
    for word in argv:
        if word.startswith("--") and len(word) > 2:
            found.append((word[2:].lower(), []))
        elif found:
            found[-1][1].append(word)
    return [(name, tuple(values)) for name, values in found]


def _apply(user: User, rules: Iterable[str]) -> User:
    for rule in rules:
        lowered = rule.lower()
        if lowered == "on":
            user = replace(user, enabled=True)
        elif lowered == "off":
            user = replace(user, enabled=False)
        elif lowered == "nopass":
            user = replace(user, nopass=True, passwords=frozenset())
        elif lowered == "resetpass":
            user = replace(user, nopass=False, passwords=frozenset())
        elif lowered == "reset":
            user = _RESET
        elif rule.startswith(">"):
            user = replace(user, nopass=False, passwords=user.passwords | {rule[1:]})
        elif rule.startswith("<"):
            user = replace(user, passwords=user.passwords - {rule[1:]})
        # Key, channel and command rules decide what a user may run, not whether it logs in.
    return user


def server_users(argv: Sequence[str]) -> Mapping[str, User]:
    """The users a server started with ``argv`` has. ``requirepass`` sets the default user's password (empty:
    none); a ``user`` directive is applied after every ``requirepass``, from a reset user, as the server
    loads configured users once its configuration is read."""
    default = OPEN_DEFAULT
    configured: list[tuple[str, tuple[str, ...]]] = []
    for name, values in directives(argv):
        if name == "requirepass":
            password = values[0] if values else ""
            default = _apply(default, ["resetpass", f">{password}" if password else "nopass"])
        elif name == "user" and values:
            configured.append((values[0], values[1:]))
    users = {"default": default}
    for username, rules in configured:
        users[username] = _apply(_RESET, rules)
    return users


def server_argv(spec: ContainerSpec, datastore_kind: str) -> tuple[str, ...]:
    """The server's command line: the container's command and args, then what its image appends from env."""
    extra_var = EXTRA_FLAGS_ENV.get(datastore_kind)
    extra = (spec.env.get(extra_var) or "") if extra_var is not None else ""
    return (*spec.command, *spec.args, *extra.split())


def credentials(address: str) -> Credentials:
    """The user and password an address value carries (no side effects)."""
    text = address.strip()
    if "://" in text:
        authority = text.split("://", 1)[1].split("/", 1)[0]
        if "@" not in authority:
            return Credentials()
        userinfo = authority.rsplit("@", 1)[0]
        user, colon, password = userinfo.partition(":")
        return Credentials(user or None, password if colon else None)
    options: dict[str, str] = {}
    for part in text.split(",")[1:]:
        key, equals, value = part.partition("=")
        if equals:
            options[key.strip().lower()] = value.strip()
    return Credentials(options.get("user"), options.get("password"))


def refusal(users: Mapping[str, User], presented: Credentials) -> Refusal | None:
    """How the server answers a client presenting ``presented``; None when it logs the client in."""
    default = users["default"]
    if not presented.sends_auth:
        return None if default.enabled and default.nopass else "noauth"
    password = presented.password or ""
    if presented.user is None:
        if default.nopass:
            return "password"  # AUTH <password> while the default user has none configured
        return None if default.accepts(password) else "wrongpass"
    user = users.get(presented.user)
    return None if user is not None and user.accepts(password) else "wrongpass"
