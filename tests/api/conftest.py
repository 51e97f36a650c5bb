from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.live import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One control plane per test module, stopped (its runs with it) when the module is done."""
    live = Server(data=Path(tmp_path_factory.mktemp("control"))).start()
    try:
        yield live
    finally:
        live.stop()
