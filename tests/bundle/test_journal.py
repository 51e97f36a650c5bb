from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.journal import Journal, genesis_hash, scan_stream, sha256_hex
from orchestrator.bundle.reader import read_bundle, read_records
from orchestrator.bundle.records import AlertRecord, FaultInjected, ModelCall, ServiceSample
from orchestrator.errors import BundleError


def _alert(n: int) -> AlertRecord:
    return AlertRecord(
        alert_id=f"a{n}",
        rule="HighErrorRate",
        labels={"namespace": "boutique", "service": "frontend"},
        starts_at=float(n),
    )


def _fault() -> FaultInjected:
    return FaultInjected(
        fault_id="f001",
        catalog_id="ob-cfg-001",
        category="configuration",
        mechanism="config",
        namespace="boutique",
        target="cartservice",
        culprits=["cartservice"],
        artifact="config:cartservice/env/REDIS_ADDR",
        scope=["frontend", "cartservice", "checkoutservice"],
        inject_s=0.0,
        planned_revert_s=600.0,
        pre_value="redis-cart:6379",
        injected_value="redis-cart:6380",
    )


def test_the_same_records_give_byte_identical_stream_files(tmp_path: Path) -> None:
    records = [sample_manifest(), _fault(), _alert(1), ServiceSample(t=0.0, q=5.0, e=0.1, l=0.0)]
    first = write_bundle(tmp_path / "one", records, seal=False, runtime={"host": "alpha", "started": 1.0})
    second = write_bundle(tmp_path / "two", records, seal=False, runtime={"host": "beta", "started": 9.0})
    for stream in ("run.jsonl", "faults.jsonl", "alerts.jsonl", "service.jsonl"):
        assert (first / stream).read_bytes() == (second / stream).read_bytes()
    assert (first / "runtime.json").read_bytes() != (second / "runtime.json").read_bytes()


def test_each_line_is_canonical_json_chained_to_the_previous_line(tmp_path: Path) -> None:
    write_bundle(tmp_path, [sample_manifest(), _alert(1), _alert(2)], seal=False)
    lines = (tmp_path / "alerts.jsonl").read_bytes().splitlines()
    assert json.loads(lines[0])["prev"] == genesis_hash("run-0001") == sha256_hex(b"run-0001")
    assert json.loads(lines[1])["prev"] == sha256_hex(lines[0])
    for line in lines:
        assert line.decode() == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"))


def test_sets_in_records_are_stored_sorted(tmp_path: Path) -> None:
    write_bundle(tmp_path, [sample_manifest(), _fault()], seal=False)
    body = json.loads((tmp_path / "faults.jsonl").read_text())
    assert body["scope"] == ["cartservice", "checkoutservice", "frontend"]


def test_reopening_after_a_crash_drops_the_cut_record_and_continues_the_chain(tmp_path: Path) -> None:
    with Journal(tmp_path, run_id="run-0001") as journal:
        journal.append(sample_manifest())
        journal.append(_alert(1))
    stream = tmp_path / "alerts.jsonl"
    with stream.open("ab") as handle:
        handle.write(b'{"alert_id":"a2","kind":"al')  # the process died mid-write
    assert [r.kind for r in read_records(tmp_path)] == ["run_manifest", "alert"]
    with Journal(tmp_path, run_id="run-0001") as journal:
        journal.append(_alert(3))
    scan = scan_stream(stream, genesis=genesis_hash("run-0001"))
    assert scan.problems == [] and scan.partial_tail == b""
    assert [r.alert_id for r in read_bundle(tmp_path).alerts] == ["a1", "a3"]


def test_a_journal_refuses_to_extend_a_broken_chain(tmp_path: Path) -> None:
    write_bundle(tmp_path, [sample_manifest(), _alert(1), _alert(2)], seal=False)
    stream = tmp_path / "alerts.jsonl"
    stream.write_bytes(stream.read_bytes().replace(b'"starts_at":1.0', b'"starts_at":7.0'))
    with Journal(tmp_path, run_id="run-0001") as journal, pytest.raises(BundleError, match="line 2"):
        journal.append(_alert(3))


def test_a_manifest_for_another_run_is_refused(tmp_path: Path) -> None:
    with Journal(tmp_path, run_id="run-0001") as journal, pytest.raises(BundleError, match="run-0002"):
        journal.append(sample_manifest(run_id="run-0002"))


def test_the_reader_names_file_line_field_and_value_of_a_bad_record(tmp_path: Path) -> None:
    write_bundle(
        tmp_path, [sample_manifest(), ModelCall(t=1.0, model="m", tokens_in=3, tokens_out=4)], seal=False
    )
    stream = tmp_path / "metering.jsonl"
    stream.write_text(stream.read_text().replace('"tokens_in":3', '"tokens_in":-3'))
    with pytest.raises(BundleError, match=r"metering\.jsonl:1: model_call\.tokens_in = -3"):
        read_bundle(tmp_path)


def test_a_record_of_an_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    write_bundle(tmp_path, [sample_manifest(), _alert(1)], seal=False)
    stream = tmp_path / "alerts.jsonl"
    stream.write_text(stream.read_text().replace('"v":1', '"v":2'))
    with pytest.raises(BundleError, match=r"alerts\.jsonl:1: alert\.v = 2"):
        read_bundle(tmp_path)


def test_an_artifact_outside_the_closed_vocabulary_is_rejected() -> None:
    with pytest.raises(ValueError, match="artifact kind 'image'"):
        FaultInjected(**{**_fault().model_dump(), "artifact": "image:cartservice"})


def test_a_deferred_batch_is_flushed_per_record_and_fsynced_once_per_stream_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr("orchestrator.bundle.journal.os.fsync", synced.append)
    journal = Journal(tmp_path, run_id="run-0001")
    journal.append(sample_manifest())
    assert len(synced) == 1  # outside a batch: every record
    with journal.deferred_sync():
        for n in range(5):
            journal.append(_alert(n))
            # written and flushed at once: a crash of the process loses nothing acknowledged
            assert len((tmp_path / "alerts.jsonl").read_bytes().splitlines()) == n + 1
        journal.append(ServiceSample(t=0.0, q=5.0, e=0.1, l=0.0))
        assert len(synced) == 1
    assert len(synced) == 3  # alerts and service, once each
    journal.append(_alert(9))
    assert len(synced) == 4
    journal.close()
    with_batch = (tmp_path / "alerts.jsonl").read_bytes()
    plain = write_bundle(
        tmp_path / "plain", [sample_manifest(), *(_alert(n) for n in range(5)), _alert(9)], seal=False
    )
    assert (plain / "alerts.jsonl").read_bytes() == with_batch
