from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.live import Server
from tests.api.postgres import postgres_server, server_binaries


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One control plane per test module, stopped (its runs with it) when the module is done."""
    live = Server(data=Path(tmp_path_factory.mktemp("control"))).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """One throwaway PostgreSQL server for the session (skipped where none is installed, except in CI)."""
    if server_binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL's server is not installed; .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL's server is not installed (the test runs wherever CI is set)")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def registry_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty registry database: SQLite in a file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'r.sqlite'}"
    import psycopg

    server: str = request.getfixturevalue("postgres_server_url")
    name = f"registry_{uuid.uuid4().hex[:12]}"
    plain = server.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + f"/{name}"
