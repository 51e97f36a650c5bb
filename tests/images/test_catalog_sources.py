from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.images.upstreams import UPSTREAMS

CODE_FAULTS = [
    pytest.param(entry, id=entry.id)
    for app in app_names()
    for entry in load_catalog(app).entries
    if isinstance(entry, CodeFault)
]


def test_the_catalog_has_code_faults_and_every_app_with_one_has_a_pinned_upstream() -> None:
    assert CODE_FAULTS
    apps = {param.values[0].app for param in CODE_FAULTS}  # type: ignore[union-attr]
    assert apps <= set(UPSTREAMS), apps - set(UPSTREAMS)


@pytest.mark.parametrize("entry", CODE_FAULTS)
def test_every_code_fault_names_a_file_in_the_checkout_and_a_real_change(entry: CodeFault) -> None:
    source = entry.inject.source
    path = PurePosixPath(source.file)
    assert source.file.strip() and not path.is_absolute() and ".." not in path.parts
    assert source.before.strip() and source.after.strip()
    assert source.before != source.after
