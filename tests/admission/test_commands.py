"""The argument checks of ``marathon catalog admit``, which change nothing, and its check of stale records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.admissions import admission_path
from orchestrator.catalog.apps import REPOSITORY_ROOT
from orchestrator.cli import main


def test_admit_refuses_ids_the_app_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    before = admission_path("online-boutique").read_bytes()
    assert main(["catalog", "admit", "--app", "online-boutique", "--ids", "tt-not-here"]) == 2
    assert "tt-not-here" in capsys.readouterr().err
    assert admission_path("online-boutique").read_bytes() == before


def test_admit_refuses_fewer_than_one_worker(capsys: pytest.CaptureFixture[str]) -> None:
    before = admission_path("online-boutique").read_bytes()
    argv = ["catalog", "admit", "--app", "online-boutique", "--ids", "ob-cart-redis-port", "--workers", "0"]
    assert main(argv) == 2
    assert "--workers must be at least 1, got 0" in capsys.readouterr().err
    assert admission_path("online-boutique").read_bytes() == before


def test_a_current_catalog_has_nothing_stale_to_screen(capsys: pytest.CaptureFixture[str]) -> None:
    before = admission_path("online-boutique").read_bytes()
    assert main(["catalog", "admit", "--app", "online-boutique", "--stale", "--check"]) == 0
    assert "every entry's admission record is current" in capsys.readouterr().out
    assert admission_path("online-boutique").read_bytes() == before


@pytest.mark.slow
def test_an_entry_changed_since_its_record_is_screened_and_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("manifests/online-boutique", "fault_catalog/online-boutique"):
        shutil.copytree(REPOSITORY_ROOT / folder, tmp_path / folder)
    path = admission_path("online-boutique", root=tmp_path)
    document = json.loads(path.read_text())
    record = next(r for r in document["entries"] if r["id"] == "ob-cart-redis-port")
    record["content_hash"] = "0" * 64  # as if the entry had changed after it was screened
    path.write_text(json.dumps(document))
    before = path.read_bytes()
    argv = ["catalog", "admit", "--app", "online-boutique", "--stale", "--check", "--root", str(tmp_path)]
    assert main(argv) == 1
    said = capsys.readouterr()
    assert "admitted  ob-cart-redis-port" in said.out and "1 of 1 admitted" in said.out
    assert "no current record for ob-cart-redis-port" in said.err
    assert path.read_bytes() == before
