"""Everything a run is planned from: the catalog (admitted entries only), the topology, the rule pack, the
schedule, and their versions. Reading files is the only side effect; the plan itself is pure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from orchestrator.catalog.admissions import admission_path, admitted_ids
from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import Catalog, default_root, load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Topology
from orchestrator.run.config import RunConfig, Versions, code_digest
from orchestrator.schedule import Schedule, decoy_inputs, plan_schedule
from orchestrator.telemetry.rules import RulePack, load_rule_pack


@dataclass(frozen=True)
class Admission:
    """Which entries may be drawn; ``source`` is ``none`` when the app has no admission record."""

    admitted: frozenset[str] | None
    source: str
    sha256: str


def read_admission(app: str, *, root: Path, catalog: Catalog | None = None) -> Admission:
    """The app's committed admission verdicts (``fault_catalog/<app>/admission.json``): admitted entries
    whose content hash is current; every entry when the app has no admission file. ``catalog`` is the
    app's catalog under ``root`` when already loaded."""
    admitted = admitted_ids(app, root=root, catalog=catalog)
    if admitted is None:
        return Admission(admitted=None, source="none", sha256="")
    path = admission_path(app, root=root)
    return Admission(
        admitted=admitted,
        source=path.relative_to(root).as_posix(),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )


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

    def entry(self, catalog_id: str) -> Entry:
        return self.catalog.by_id[catalog_id]


def make_plan(config: RunConfig, *, root: Path | None = None) -> RunPlan:
    """Load and plan everything the run needs; ``ConfigError``/``CatalogError`` before any side effect."""
    base = root if root is not None else default_root()
    catalog = load_catalog(config.app, root=base)
    topology = load_topology(config.app, root=base)
    pack = load_rule_pack()
    admission = read_admission(config.app, root=base, catalog=catalog)
    entries = [e for e in catalog.entries if admission.admitted is None or e.id in admission.admitted]
    scopes, decoy_services = decoy_inputs(catalog, topology)
    schedule = plan_schedule(
        app=config.app,
        entries=entries,
        seed=config.seed,
        params=config.schedule_params(),
        scopes=scopes,
        decoy_services=decoy_services,
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
        rules=pack.for_app(config.app),
        schedule=schedule,
        versions=versions,
        admission=admission,
    )


def _code_version() -> str:
    from orchestrator import __version__

    return __version__
