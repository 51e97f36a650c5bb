"""Entries screened in copies of one warm twin: what a copy does stays in it, and an entry's record does not
depend on what its worker screened before."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from orchestrator.admission.copies import in_copy
from orchestrator.admission.screening import Settings, admit, jobs_for
from orchestrator.catalog.loading import load_catalog

OB = "online-boutique"


def test_what_a_copy_changes_stays_in_the_copy_and_its_result_comes_back() -> None:
    held = {"state": "warm"}

    def work() -> tuple[str, int]:
        held["state"] = "injected"
        return held["state"], 42

    assert in_copy(work) == ("injected", 42)
    assert held == {"state": "warm"}


def test_an_exception_in_a_copy_comes_back_with_its_traceback() -> None:
    def work() -> None:
        raise KeyError("no such pod")

    with pytest.raises(RuntimeError, match="KeyError: 'no such pod'"):
        in_copy(work)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
def test_an_entry_gets_the_same_record_first_and_after_other_entries_of_its_worker(tmp_path: Path) -> None:
    catalog = load_catalog(OB)
    ids = ["ob-cart-redis-port", "ob-adservice-container-killed"]
    config, chaos = jobs_for(catalog, ids=ids, root=None, workdir=tmp_path, settings=Settings(seed=3))
    again = [dataclasses.replace(job, workdir=tmp_path / "again" / job.entry.id) for job in (config, chaos)]
    records, failures = admit([config, chaos, *again], workers=1)
    assert failures == {}
    first, second = records[:2], records[2:]
    assert [r.id for r in first] == ids and [r.id for r in second] == ids
    assert first == second
    assert all(r.measurements is not None for r in records)
