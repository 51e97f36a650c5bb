"""Live faults of Online Boutique's catalog for tests of the runner's bookkeeping."""

from __future__ import annotations

from orchestrator.catalog.loading import load_catalog
from orchestrator.mechanisms.handles import Handle
from orchestrator.run.faults import LiveFault
from orchestrator.schedule import Activation


def live_fault(fault_id: str, catalog_id: str, inject_s: float) -> LiveFault:
    """Fault ``fault_id`` (``f<number>``) of entry ``catalog_id``, injected at ``inject_s`` for 150 s."""
    catalog = load_catalog("online-boutique")
    entry = catalog.by_id[catalog_id]
    handle = Handle(fault_id=fault_id, catalog_id=entry.id, mechanism=entry.mechanism, kind="Deployment",
                    namespace="online-boutique", name=entry.target)  # fmt: skip
    activation = Activation(
        index=int(fault_id[1:]), arrival=1, at_s=int(inject_s), duration_s=150, catalog_id=entry.id,
        category=entry.category, mechanism=str(entry.mechanism), target=entry.target,
    )  # fmt: skip
    return LiveFault(fault_id, activation, entry, handle, inject_s, tuple(sorted(catalog.scope(entry))))
