"""The argument checks of ``marathon catalog admit``, which change nothing."""

from __future__ import annotations

import pytest

from orchestrator.catalog.admissions import admission_path
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
