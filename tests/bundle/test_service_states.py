"""Workload snapshots in the bundle: their own stream, read back by the reader, checked by ``bundle verify``
(one start snapshot, then one end snapshot); a bundle without them still reads and verifies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.records import Record, RunEnded, ServiceStates, WorkloadState
from orchestrator.bundle.verify import verify_bundle

HASH = "0" * 64


def _workload(name: str, kind: str = "Deployment") -> WorkloadState:
    return WorkloadState.model_validate(
        {"kind": kind, "name": name, "images": {"server": f"{name}:v1"}, "config_sha256": HASH, "replicas": 1}
    )


def _states(moment: str, t: float) -> ServiceStates:
    return ServiceStates.model_validate(
        {
            "moment": moment,
            "t": t,
            "workloads": [_workload("redis-cart", "StatefulSet"), _workload("frontend")],
        }
    )


def _bundle(tmp_path: Path, records: list[Record]) -> Path:
    return write_bundle(tmp_path / "bundle", [sample_manifest(), *records, RunEnded(t=360.0)])


def _problems(bundle: Path) -> list[str]:
    return [str(finding) for finding in verify_bundle(bundle).findings]


def test_snapshots_are_their_own_stream_read_back_in_workload_order_and_verify(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, [_states("start", 0.0), _states("end", 360.0)])
    lines = (bundle / "data" / "state.jsonl").read_text().splitlines()
    assert [json.loads(line)["moment"] for line in lines] == ["start", "end"]
    loaded = read_bundle(bundle)
    assert [s.moment for s in loaded.service_states] == ["start", "end"]
    assert [(w.kind, w.name) for w in loaded.service_states[0].workloads] == [
        ("Deployment", "frontend"),
        ("StatefulSet", "redis-cart"),
    ]
    assert verify_bundle(bundle).ok


def test_a_bundle_without_snapshots_reads_and_verifies(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, [])
    assert not (bundle / "data" / "state.jsonl").exists()
    assert read_bundle(bundle).service_states == ()
    assert verify_bundle(bundle).ok


def test_verify_names_a_second_start_and_a_start_after_the_end(tmp_path: Path) -> None:
    twice = _bundle(
        tmp_path / "twice", [_states("start", 0.0), _states("start", 10.0), _states("end", 360.0)]
    )
    assert _problems(twice) == ["data/state.jsonl: line 2: a second start snapshot"]
    late = _bundle(tmp_path / "late", [_states("end", 360.0), _states("start", 0.0)])
    assert _problems(late) == ["data/state.jsonl: line 2: the start snapshot after the end one"]


def test_a_workload_listed_twice_or_a_malformed_hash_is_refused() -> None:
    with pytest.raises(ValidationError, match="listed twice"):
        ServiceStates(moment="start", t=0.0, workloads=[_workload("frontend"), _workload("frontend")])
    with pytest.raises(ValidationError):
        WorkloadState.model_validate(
            {"kind": "Deployment", "name": "x", "images": {}, "config_sha256": "abc", "replicas": 1}
        )
