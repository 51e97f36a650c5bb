"""Writing a whole bundle from a list of records in one go: for tests, fixtures and benchmarks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from orchestrator.bundle.journal import Journal
from orchestrator.bundle.records import Price, Record, RunManifest
from orchestrator.bundle.seal import seal_bundle
from orchestrator.errors import BundleError


def write_bundle(
    directory: Path,
    records: Iterable[Record],
    *,
    seal: bool = True,
    runtime: Mapping[str, Any] | None = None,
    signing_key: Path | None = None,
    bagging_date: str | None = "2000-01-01",
) -> Path:
    """Journal ``records`` (which must include one ``RunManifest``) into ``directory`` and seal it.

    The default bagging date is fixed so that bundles built from the same records are byte-identical.
    """
    records = list(records)
    manifests = [record for record in records if isinstance(record, RunManifest)]
    if len(manifests) != 1:
        raise BundleError(
            f"{directory}: expected exactly one RunManifest among the records, got {len(manifests)}"
        )
    with Journal(Path(directory), run_id=manifests[0].run_id, fsync=False) as journal:
        for record in records:
            journal.append(record)
        if runtime is not None:
            journal.write_runtime(runtime)
    if seal:
        seal_bundle(Path(directory), signing_key=signing_key, bagging_date=bagging_date)
    return Path(directory)


def sample_manifest(**overrides: Any) -> RunManifest:
    """A complete, valid run manifest for tests and benchmarks; ``overrides`` replace any field."""
    fields: dict[str, Any] = {
        "run_id": "run-0001",
        "app": "online-boutique",
        "namespace": "boutique",
        "seed": 42,
        "catalog_version": "1",
        "catalog_sha256": "0" * 64,
        "rule_pack_version": "1",
        "rule_pack_sha256": "1" * 64,
        "code_version": "0.1.0",
        "code_sha256": "2" * 64,
        "agent_name": "test-agent",
        "agent_command": ["test-agent", "--once"],
        "delta_s": 120.0,
        "budget_s": 110.0,
        "grace_s": 60.0,
        "schedule_params": {"faults": 60, "ramp": 4.0},
        "price_table": {"*": Price(input_usd_per_mtok=1.0, output_usd_per_mtok=4.0)},
    }
    fields.update(overrides)
    return RunManifest(**fields)
