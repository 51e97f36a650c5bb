"""Admission records: the file bytes, and the checks keeping records and catalog aligned."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.admissions import (
    AdmissionFile,
    AdmissionRecord,
    Procedure,
    admission_path,
    admitted_ids,
    load_admission,
    merge,
    render_admission,
    stale_entries,
)
from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import Catalog, default_root, load_catalog
from orchestrator.errors import CatalogError
from tests.catalog.admission_support import measured as _measured

OB = "online-boutique"
PROCEDURE = Procedure(seed=1, warmup_s=120, window_s=300, recovery_s=240, rule_pack="1.0.0")


@functools.cache
def _catalog(app: str = OB) -> Catalog:
    return load_catalog(app)


def _entry(catalog_id: str = "ob-cart-redis-port") -> Entry:
    return _catalog().by_id[catalog_id]


def _file(*records: AdmissionRecord) -> AdmissionFile:
    return AdmissionFile(app=OB, procedure=PROCEDURE, entries=records)


def _record(catalog_id: str, *, admitted: bool = True, content_hash: str | None = None) -> AdmissionRecord:
    entry = _entry(catalog_id)
    return AdmissionRecord(
        id=catalog_id,
        content_hash=content_hash or entry.content_hash(),
        admitted=admitted,
        reasons=("server errors 12.0/min >= 4",) if admitted else ("no screening criterion",),
        measurements=_measured(),
        rules_fired=("ServiceHighErrorRatio",),
    )


def test_the_file_is_sorted_json_with_records_in_id_order_and_reads_back_equal(tmp_path: Path) -> None:
    admission = _file(_record("ob-cart-redis-port"), _record("ob-ad-regex-per-request"))
    text = render_admission(admission)
    assert text == render_admission(_file(*reversed(admission.entries)))
    document = json.loads(text)
    assert [record["id"] for record in document["entries"]] == [
        "ob-ad-regex-per-request",
        "ob-cart-redis-port",
    ]
    assert text == json.dumps(document, sort_keys=True, indent=2) + "\n"
    folder = tmp_path / "fault_catalog" / OB
    folder.mkdir(parents=True)
    (folder / "admission.json").write_text(text)
    loaded = load_admission(OB, root=tmp_path)
    assert loaded is not None and render_admission(loaded) == text


def test_a_malformed_admission_file_is_reported_with_its_path_and_field(tmp_path: Path) -> None:
    folder = tmp_path / "fault_catalog" / OB
    folder.mkdir(parents=True)
    document = json.loads(render_admission(_file(_record("ob-cart-redis-port"))))
    document["entries"][0]["admitted"] = "perhaps"
    (folder / "admission.json").write_text(json.dumps(document))
    with pytest.raises(CatalogError) as caught:
        load_admission(OB, root=tmp_path)
    message = str(caught.value)
    assert str(folder / "admission.json") in message and "entries.0.admitted = 'perhaps'" in message


def test_an_edited_entry_is_stale_until_admitted_again() -> None:
    catalog = _catalog()
    current = _file(*(_record(entry.id) for entry in catalog.entries))
    assert stale_entries(catalog, current) == []
    edited = _file(
        *(r for r in current.entries if r.id != "ob-cart-redis-port"),
        _record("ob-cart-redis-port", content_hash="0" * 64),
    )
    assert stale_entries(catalog, edited) == ["ob-cart-redis-port"]
    missing = _file(*(r for r in current.entries if r.id != "ob-shipping-pod-failure"))
    assert stale_entries(catalog, missing) == ["ob-shipping-pod-failure"]


def test_a_partial_admission_merges_over_the_old_records_and_drops_entries_the_catalog_lost() -> None:
    catalog = _catalog()
    gone = _record("ob-cart-redis-port").model_copy(update={"id": "ob-no-longer-in-the-catalog"})
    old = _file(_record("ob-cart-redis-port", admitted=False), _record("ob-ad-regex-per-request"), gone)
    merged = merge(old, _file(_record("ob-cart-redis-port")), catalog=catalog)
    assert [(r.id, r.admitted) for r in merged.entries] == [
        ("ob-ad-regex-per-request", True),
        ("ob-cart-redis-port", True),
    ]


def test_admitted_ids_are_the_admitted_records_whose_content_is_current(tmp_path: Path) -> None:
    root = default_root()
    shutil.copytree(root / "fault_catalog" / OB, tmp_path / "fault_catalog" / OB)
    shutil.copytree(root / "manifests" / OB, tmp_path / "manifests" / OB)
    (tmp_path / "fault_catalog" / OB / "admission.json").unlink(missing_ok=True)
    assert admitted_ids(OB, root=tmp_path) is None
    admission = _file(
        _record("ob-cart-redis-port"),
        _record("ob-ad-regex-per-request", admitted=False),
        _record("ob-shipping-pod-failure", content_hash="f" * 64),
    )
    admission_path(OB, root=tmp_path).write_text(render_admission(admission))
    assert admitted_ids(OB, root=tmp_path) == frozenset({"ob-cart-redis-port"})


@pytest.mark.parametrize("app", app_names())
def test_every_committed_entry_has_a_current_admission_record_where_the_app_has_a_file(app: str) -> None:
    admission = load_admission(app)
    if admission is None:
        pytest.skip(f"{app} has no admission.json yet")
    assert stale_entries(_catalog(app), admission) == []
