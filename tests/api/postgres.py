"""A throwaway PostgreSQL server on 127.0.0.1 for registry tests: Debian's server binaries, a fresh data
directory, trust authentication, stopped and removed afterwards.

PostgreSQL refuses to run as root, so under root the server runs as the ``postgres`` user the Debian package
creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READY_TIMEOUT_S = 30.0
USER = "marathon"


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: on PATH, else Debian's versioned folder."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("postgres") is not None:
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "postgres").is_file():
            return Path(folder)
    return None


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield its SQLAlchemy URL (psycopg driver); stop it and delete its data."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL's server binaries (initdb, postgres) are not installed")
    home = Path(tempfile.mkdtemp(prefix="marathon-pg-", dir="/tmp"))
    data = home / "data"
    user = _as_server_user()
    if user:
        shutil.chown(home, user="postgres", group="postgres")
    port = _free_port()
    log = (home / "server.log").open("ab")
    subprocess.run(
        [*user, str(binaries / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8"],
        check=True, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    server = subprocess.Popen(
        [*user, str(binaries / "postgres"), "-D", str(data), "-k", str(home), "-h", "127.0.0.1",
         "-p", str(port), "-c", "fsync=off", "-c", "full_page_writes=off"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_ready(port, server)
        yield f"postgresql+psycopg://{USER}@127.0.0.1:{port}/postgres"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _wait_ready(port: int, server: subprocess.Popen[bytes]) -> None:
    import psycopg

    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {server.returncode} before it was ready")
        try:
            psycopg.connect(host="127.0.0.1", port=port, user=USER, dbname="postgres").close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
