"""What a run is planned from: the admitted entries of the catalog and the app's rule groups."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog import admissions as admissions_module
from orchestrator.catalog.admissions import (
    FILE_NAME as ADMISSION_FILE,
)
from orchestrator.catalog.admissions import AdmissionFile, AdmissionRecord, Procedure, render_admission
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import Catalog, default_root, load_catalog
from orchestrator.run import plan as plan_module
from orchestrator.run.config import RunConfig
from orchestrator.run.plan import make_plan, read_admission
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.twin.boot import code_faults


def test_without_an_admission_record_every_entry_may_be_drawn(tmp_path: Path) -> None:
    root = _project(tmp_path)
    admission = read_admission("online-boutique", root=root)
    assert admission.admitted is None
    assert admission.source == "none"


def _project(tmp: Path) -> Path:
    """A project root holding the Online Boutique catalog and topology and nothing else."""
    for part in ("fault_catalog/online-boutique", "manifests/online-boutique"):
        shutil.copytree(default_root() / part, tmp / part, ignore=shutil.ignore_patterns(ADMISSION_FILE))
    return tmp


def test_only_admitted_entries_with_an_unchanged_content_hash_are_drawn(tmp_path: Path) -> None:
    root = _project(tmp_path)
    catalog = load_catalog("online-boutique", root=root)
    first, second, third = catalog.entries[:3]
    records = (
        AdmissionRecord(
            id=first.id, content_hash=first.content_hash(), admitted=True, reasons=(), measurements=None
        ),
        AdmissionRecord(
            id=second.id, content_hash="edited-since", admitted=True, reasons=(), measurements=None
        ),
        AdmissionRecord(
            id=third.id, content_hash=third.content_hash(), admitted=False, reasons=(), measurements=None
        ),
    )
    procedure = Procedure(seed=1, warmup_s=300, window_s=300, recovery_s=300, rule_pack="1")
    document = AdmissionFile(app="online-boutique", procedure=procedure, entries=records)
    (root / "fault_catalog" / "online-boutique" / ADMISSION_FILE).write_text(render_admission(document))
    admission = read_admission("online-boutique", root=root)
    assert admission.admitted == frozenset({first.id})
    assert admission.source == "fault_catalog/online-boutique/admission.json"
    assert len(admission.sha256) == 64
    # The plan hands over the catalog it has loaded: the same verdicts as reading it again.
    assert read_admission("online-boutique", root=root, catalog=catalog) == admission


def test_a_run_plans_from_one_reading_of_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The admitted entries and the twin's code faults come from the catalog the plan loaded."""
    calls: list[str | None] = []
    real = load_catalog

    def counted(app: str | None = None, **kwargs: Any) -> Catalog:
        calls.append(app)
        return real(app, **kwargs)

    monkeypatch.setattr(plan_module, "load_catalog", counted)
    monkeypatch.setattr(admissions_module, "load_catalog", counted)
    plan = make_plan(RunConfig(app="online-boutique", seed=42, agent="runbook"))
    assert calls == ["online-boutique"]
    assert plan.admission == read_admission("online-boutique", root=default_root())
    handed = [entry for entry in plan.catalog.entries if isinstance(entry, CodeFault)]
    assert handed and handed == code_faults("online-boutique", root=default_root())


def test_the_rules_labelled_for_other_apps_are_not_evaluated() -> None:
    pack = load_rule_pack()
    mine = pack.for_app("online-boutique")
    assert {rule.app for rule in mine.rules} == {None, "online-boutique"}
    assert {rule.app for rule in pack.rules} >= {"train-ticket", "astronomy-shop"}
    assert len(mine.rules) < len(pack.rules)
    assert mine.sha256 == pack.sha256
