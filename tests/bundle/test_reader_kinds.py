"""Every record kind a journal can hold has a place in a read bundle: a run whose journal holds a kind the
reader does not group would seal and then fail to score."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from orchestrator.bundle.building import sample_manifest
from orchestrator.bundle.reader import _FIELD_OF_TYPE, Bundle, bundle_from_records
from orchestrator.bundle.records import Record, RunEnded, RunManifest, StateDrift


def test_every_record_kind_but_the_manifest_and_the_end_has_a_bundle_field() -> None:
    kinds = set(get_args(Record)) - {RunManifest, RunEnded}
    assert kinds == set(_FIELD_OF_TYPE)
    assert set(_FIELD_OF_TYPE.values()) <= set(Bundle.__dataclass_fields__)


def test_a_state_drift_is_read_into_the_bundle() -> None:
    drift = StateDrift(fault_id="f001", t=240.0, object="Deployment/currencyservice", field="image",
                       expected="v1", found="v1-1", action="restored")  # fmt: skip
    bundle = bundle_from_records([sample_manifest(), drift], path=Path("bundle"))
    assert bundle.state_drifts == (drift,)
