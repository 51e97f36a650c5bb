"""Everything a run is planned from: the catalog (admitted entries only), the topology, the rule pack, the
schedule, and their versions. Reading files is the only side effect; the plan itself is pure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.catalog.loading import Catalog, Entry, default_root, load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import APPS, Topology
from orchestrator.errors import ConfigError, Problem
from orchestrator.run.config import RunConfig, Versions, code_digest
from orchestrator.schedule import Schedule, plan_schedule
from orchestrator.telemetry.rules import RulePack, load_rule_pack

ADMISSION_FILE = "admission.json"


@dataclass(frozen=True)
class Admission:
    """Which entries may be drawn; ``source`` is ``none`` when the app has no admission record."""

    admitted: frozenset[str] | None
    source: str
    sha256: str


def read_admission(app: str, catalog: Catalog, *, root: Path) -> Admission:
    """``fault_catalog/<app>/admission.json``, or every entry when the file does not exist.

    Accepted shapes: ``{"entries": {ID: {"admitted": bool, "content_hash": H}}}``, the same mapping at the
    top level, or ``{"entries": [{"id": ID, "admitted": bool, "content_hash": H}]}``. An entry whose
    content hash differs from the catalog's was edited after admission and is not admitted.
    """
    path = root / "fault_catalog" / app / ADMISSION_FILE
    if not path.is_file():
        return Admission(admitted=None, source="none", sha256="")
    raw = path.read_bytes()
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from exc
    records = _admission_records(document, path)
    admitted = set()
    for entry_id, record in records.items():
        entry = catalog.by_id.get(entry_id)
        if entry is None or not isinstance(record, dict) or record.get("admitted") is not True:
            continue
        expected = record.get("content_hash")
        if expected is None or expected == entry.content_hash():
            admitted.add(entry_id)
    return Admission(
        admitted=frozenset(admitted),
        source=str(path.relative_to(root)),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def _admission_records(document: Any, path: Path) -> dict[str, Any]:
    entries = document.get("entries", document) if isinstance(document, dict) else None
    if isinstance(entries, list):
        records = {}
        for index, item in enumerate(entries):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise ConfigError(
                    "unreadable admission record",
                    [Problem(str(path), None, f"entries.{index}", repr(item), "needs an id")],
                )
            records[item["id"]] = item
        return records
    if isinstance(entries, dict):
        return entries
    raise ConfigError(
        "unreadable admission record",
        [Problem(str(path), None, "entries", repr(type(document).__name__), "expected a mapping or list")],
    )


def app_rules(pack: RulePack, app: str) -> RulePack:
    """The pack without the groups written for the other apps: they select other namespaces and can never
    fire here, so evaluating them would only cost queries (no side effects)."""
    others = set(APPS) - {app}
    rules = tuple(rule for rule in pack.rules if rule.group not in others)
    return RulePack(version=pack.version, sha256=pack.sha256, rules=rules, files=pack.files)


@dataclass(frozen=True)
class RunPlan:
    catalog: Catalog
    topology: Topology
    rules: RulePack
    schedule: Schedule
    versions: Versions
    admission: Admission

    @property
    def namespace(self) -> str:
        return self.topology.namespace

    def entry(self, entry_id: str) -> Entry:
        return self.catalog.by_id[entry_id]


def make_plan(config: RunConfig, *, root: Path | None = None) -> RunPlan:
    """Load and plan everything the run needs; ``ConfigError``/``CatalogError`` before any side effect."""
    base = root if root is not None else default_root()
    catalog = load_catalog(config.app, root=base)
    topology = load_topology(config.app, root=base)
    pack = load_rule_pack()
    admission = read_admission(config.app, catalog, root=base)
    entries = [e for e in catalog.entries if admission.admitted is None or e.id in admission.admitted]
    schedule = plan_schedule(
        app=config.app, entries=entries, seed=config.seed, params=config.schedule_params()
    )
    versions = Versions(
        catalog_version=schedule.entries_hash[:12],
        catalog_sha256=catalog.content_hash(),
        rule_pack_version=pack.version,
        rule_pack_sha256=pack.sha256,
        code_version=_code_version(),
        code_sha256=code_digest(),
        admission=admission.sha256 or admission.source,
    )
    return RunPlan(
        catalog=catalog,
        topology=topology,
        rules=app_rules(pack, config.app),
        schedule=schedule,
        versions=versions,
        admission=admission,
    )


def _code_version() -> str:
    from orchestrator import __version__

    return __version__
