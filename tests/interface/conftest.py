from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interface.world import World, running_world


@pytest.fixture(scope="module")
def shared_ob(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One Online Boutique twin for tests that only read (mutating tests take their own)."""
    with running_world("online-boutique", directory=tmp_path_factory.mktemp("ob")) as world:
        yield world


@pytest.fixture
def ob(tmp_path: Path) -> Iterator[World]:
    with running_world("online-boutique", directory=tmp_path) as world:
        yield world
