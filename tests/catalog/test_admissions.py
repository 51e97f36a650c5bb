"""Admission records: the verdict, the file bytes, and the checks keeping records and catalog aligned."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.admission import (
    AdmissionFile,
    AdmissionRecord,
    Measurements,
    Procedure,
    admission_path,
    admitted_ids,
    breaks_startup,
    introduced_lines,
    judge,
    load_admission,
    merge,
    render_admission,
    stale_entries,
)
from orchestrator.catalog.faults import CodeFault, ConfigFault, ConfigInject
from orchestrator.catalog.loading import Catalog, Entry, default_root, known_apps, load_catalog
from orchestrator.errors import CatalogError

OB = "online-boutique"
PROCEDURE = Procedure(seed=1, warmup_s=120, window_s=300, recovery_s=240, rule_pack="1.0.0")


def _measured(**changes: object) -> Measurements:
    healthy_symptom: dict[str, object] = {
        "entry_rate_before": 16.3,
        "entry_rate_after": 16.4,
        "entry_failed_fraction_after": 0.3,
        "server_errors_per_min_before": 0.0,
        "server_errors_per_min": 12.0,
        "error_logs_per_min_before": 0.0,
        "error_logs_per_min_after": 3.0,
        "restarts": 0,
        "message_before": False,
        "message_after": True,
        "message_source": "log",
        "deployed_value_ok": True,
        "became_ready": True,
        "restored": True,
        "ready_after_revert": True,
        "serving_after_revert": True,
        "message_after_revert": False,
    }
    healthy_symptom.update(changes)
    return Measurements.model_validate(healthy_symptom)


@functools.cache
def _catalog(app: str = OB) -> Catalog:
    return load_catalog(app)


def _entry(entry_id: str = "ob-cart-redis-port") -> Entry:
    return _catalog().by_id[entry_id]


def test_an_entry_whose_message_appears_with_server_errors_is_admitted_for_that_reason() -> None:
    admitted, reasons = judge(_entry(), _measured(), direct=True)
    assert admitted
    assert reasons == ("server errors 12.0/min >= 4",)


def test_new_error_logs_count_only_above_the_before_window() -> None:
    found = _measured(server_errors_per_min=0.0, error_logs_per_min_before=5.0, error_logs_per_min_after=14.0)
    admitted, reasons = judge(_entry(), found, direct=True)
    assert not admitted
    assert any("no screening criterion" in reason and "9.0/min" in reason for reason in reasons)
    admitted, reasons = judge(
        _entry(), found.model_copy(update={"error_logs_per_min_after": 15.0}), direct=True
    )
    assert admitted and reasons == ("new error logs 10.0/min >= 10",)


def test_a_restart_alone_is_a_screening_criterion() -> None:
    admitted, reasons = judge(_entry(), _measured(server_errors_per_min=0.0, restarts=2), direct=True)
    assert admitted and reasons == ("2 container restart(s)",)


def test_an_entry_without_its_symptom_is_rejected_with_every_failed_check() -> None:
    nothing = _measured(message_after=False, message_source=None, server_errors_per_min=0.0)
    admitted, reasons = judge(_entry(), nothing, direct=True)
    assert not admitted
    assert reasons[0].startswith("log message 'StackExchange.Redis.RedisConnectionException")
    assert reasons[0].endswith("in cartservice absent after injection")
    assert reasons[1].startswith("no screening criterion")


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"message_before": True}, "already present before injection"),
        ({"entry_rate_after": 0.0}, "the app stopped serving"),
        ({"entry_failed_fraction_after": 1.0}, "the app stopped serving"),
        ({"deployed_value_ok": False}, "does not read back"),
        ({"became_ready": False}, "never became ready"),
        ({"restored": False}, "did not restore"),
        ({"ready_after_revert": False}, "ready after the revert"),
        ({"serving_after_revert": False}, "did not recover"),
        ({"message_after_revert": True}, "still printed after the revert"),
    ],
)
def test_each_failed_check_rejects_and_is_named(change: dict[str, object], phrase: str) -> None:
    admitted, reasons = judge(_entry(), _measured(**change), direct=True)
    assert not admitted
    assert any(phrase in reason for reason in reasons), reasons


def test_a_message_of_a_service_that_does_not_call_the_target_directly_is_rejected() -> None:
    admitted, reasons = judge(_entry(), _measured(), direct=False)
    assert not admitted and "direct caller" in reasons[0]


def test_readiness_is_not_asked_of_config_faults_that_mean_to_break_startup() -> None:
    catalog = _catalog()
    replicas = catalog.by_id["ob-checkout-replicas-zero"]
    assert isinstance(replicas, ConfigFault)
    missing_image = replicas.model_copy(
        update={"inject": ConfigInject(field="image", value="checkoutservice:v0.10.7")}
    )
    assert breaks_startup(missing_image)
    assert breaks_startup(replicas)
    assert breaks_startup(catalog.by_id["ob-recommendation-catalog-addr-cleared"])
    assert breaks_startup(catalog.by_id["ob-shipping-liveness-port"])
    assert not breaks_startup(catalog.by_id["ob-cart-redis-port"])
    assert not breaks_startup(catalog.by_id["ob-cart-redis-latency"])
    admitted, _ = judge(missing_image, _measured(became_ready=False), direct=True)
    assert admitted


def _file(*records: AdmissionRecord) -> AdmissionFile:
    return AdmissionFile(app=OB, procedure=PROCEDURE, entries=records)


def _record(entry_id: str, *, admitted: bool = True, content_hash: str | None = None) -> AdmissionRecord:
    entry = _entry(entry_id)
    return AdmissionRecord(
        id=entry_id,
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


@pytest.mark.parametrize("app", known_apps())
def test_every_committed_entry_has_a_current_admission_record_where_the_app_has_a_file(app: str) -> None:
    admission = load_admission(app)
    if admission is None:
        pytest.skip(f"{app} has no admission.json yet")
    assert stale_entries(_catalog(app), admission) == []


def test_a_code_fault_whose_build_adds_no_source_text_is_rejected() -> None:
    entry = _entry("ob-frontend-cart-divide-by-zero")
    assert isinstance(entry, CodeFault) and introduced_lines(entry)
    assert judge(entry, _measured(deployed_value_ok=None, became_ready=None), direct=True)[0]
    source = entry.inject.source.model_copy(update={"after": entry.inject.source.before})
    same = entry.model_copy(update={"inject": entry.inject.model_copy(update={"source": source})})
    admitted, reasons = judge(same, _measured(deployed_value_ok=None, became_ready=None), direct=True)
    assert not admitted
    assert reasons == ("the build v0.10.6-1 introduces no source text the earlier build lacks",)
