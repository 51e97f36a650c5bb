"""Admission records of catalog entries: what the twin showed when each entry was injected alone, the
verdict, and the checks that keep the committed records in step with the catalog.

``fault_catalog/<app>/admission.json`` holds one record per entry, keyed by the entry's content hash: an
entry edited after its admission is stale and must be admitted again. The records are catalog data: the
runner reads which entries are admitted from here without the screening that wrote them
(``orchestrator.admission``). Everything here is pure (reading a file at most).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.catalog.loading import Catalog, default_root, load_catalog
from orchestrator.errors import CatalogError

FILE_NAME = "admission.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Measurements(_Strict):
    """What admission measured for one entry; rates are rounded so the file is stable across runs.

    ``before``/``after`` are the five-minute windows around the counted injection, ``recovered`` the checks
    made after the revert. Fields that do not apply to the entry's mechanism are ``None``.
    """

    entry_rate_before: float
    entry_rate_after: float
    entry_failed_fraction_after: float
    server_errors_per_min_before: float
    server_errors_per_min: float
    error_logs_per_min_before: float
    error_logs_per_min_after: float
    restarts: int
    message_before: bool
    message_after: bool
    message_source: Literal["log", "event"] | None
    deployed_value_ok: bool | None = None
    became_ready: bool | None = None
    restored: bool
    ready_after_revert: bool
    serving_after_revert: bool
    message_after_revert: bool

    @property
    def new_error_logs_per_min(self) -> float:
        return round(max(0.0, self.error_logs_per_min_after - self.error_logs_per_min_before), 3)


class AdmissionRecord(_Strict):
    id: str
    content_hash: str
    admitted: bool
    reasons: tuple[str, ...]
    measurements: Measurements | None
    rules_fired: tuple[str, ...] = ()


class Procedure(_Strict):
    """How the records were produced, so a reader can tell what a measurement means."""

    seed: int
    warmup_s: float
    window_s: float
    recovery_s: float
    rule_pack: str


class AdmissionFile(_Strict):
    app: str
    procedure: Procedure
    entries: tuple[AdmissionRecord, ...] = Field(default=())

    def by_id(self) -> dict[str, AdmissionRecord]:
        return {record.id: record for record in self.entries}


def admission_path(app: str, *, root: Path | None = None) -> Path:
    return (root if root is not None else default_root()) / "fault_catalog" / app / FILE_NAME


def load_admission(app: str, *, root: Path | None = None) -> AdmissionFile | None:
    """The committed admission file of ``app``, or None when the app has none."""
    path = admission_path(app, root=root)
    if not path.is_file():
        return None
    try:
        loaded = AdmissionFile.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogError(f"{path}: {where} = {first.get('input')!r}: {first['msg']}") from exc
    if loaded.app != app:
        raise CatalogError(f"{path}: app = {loaded.app!r}: the file sits in the folder of {app!r}")
    return loaded


def render_admission(admission: AdmissionFile) -> str:
    """The file's bytes: sorted keys, records in id order, no wall times (no side effects)."""
    ordered = admission.model_copy(update={"entries": tuple(sorted(admission.entries, key=lambda r: r.id))})
    return json.dumps(ordered.model_dump(mode="json"), sort_keys=True, indent=2) + "\n"


def merge(old: AdmissionFile | None, new: AdmissionFile, *, catalog: Catalog) -> AdmissionFile:
    """``new``'s records over ``old``'s, keeping only entries the catalog still has (no side effects)."""
    records = {} if old is None else old.by_id()
    records.update(new.by_id())
    kept = tuple(records[key] for key in sorted(records) if key in catalog.by_id)
    return new.model_copy(update={"entries": kept})


def stale_entries(catalog: Catalog, admission: AdmissionFile) -> list[str]:
    """Ids of catalog entries with no record, or whose record was made for other content (no side effects)."""
    records = admission.by_id()
    return [
        entry.id
        for entry in catalog.entries
        if entry.id not in records or records[entry.id].content_hash != entry.content_hash()
    ]


def admitted_ids(
    app: str, *, root: Path | None = None, catalog: Catalog | None = None
) -> frozenset[str] | None:
    """The ids the scheduler may draw for ``app``: admitted records whose content hash is current.

    None when the app has no admission file (nothing has been screened, so nothing is filtered).
    ``catalog`` is the app's catalog under ``root`` when the caller has loaded it already.
    """
    admission = load_admission(app, root=root)
    if admission is None:
        return None
    if catalog is None:
        catalog = load_catalog(app, root=root)
    current = {entry.id: entry.content_hash() for entry in catalog.entries}
    return frozenset(
        record.id
        for record in admission.entries
        if record.admitted and current.get(record.id) == record.content_hash
    )
