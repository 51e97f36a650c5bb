"""Decoys of the schedule: seeded, on boundaries of the injection period, on a service of the app's own code
that no fault active or starting then touches, at most one per service and boundary."""

from __future__ import annotations

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import ServiceKind
from orchestrator.schedule import ScheduleParams, decoy_inputs, plan_schedule


@pytest.mark.parametrize("app", app_names())
def test_decoys_change_only_services_no_active_fault_touches(app: str) -> None:
    catalog, topology = load_catalog(app), load_topology(app)
    scopes, services = decoy_inputs(catalog, topology)
    own_code = {s.name for s in topology.services if s.kind in (ServiceKind.SERVICE, ServiceKind.GATEWAY)}
    assert set(services) == own_code
    params = ScheduleParams()
    placed = 0
    for seed in range(1, 21):
        schedule = plan_schedule(
            app=app, entries=catalog.entries, seed=seed, scopes=scopes, decoy_services=services
        )
        placed += len(schedule.decoys)
        assert len(schedule.decoys) <= params.decoy_count
        assert [d.index for d in schedule.decoys] == list(range(len(schedule.decoys)))
        pairs = [(d.at_s, d.target) for d in schedule.decoys]
        assert len(set(pairs)) == len(pairs)
        for decoy in schedule.decoys:
            assert 0 <= decoy.at_s < params.injection_period_s
            assert decoy.target in own_code
            live = [a for a in schedule.activations if a.at_s <= decoy.at_s < a.end_s]
            assert all(decoy.target not in scopes[a.catalog_id] for a in live), (seed, decoy)
    assert placed >= 20 * params.decoy_count // 3  # most are placed: a quiet service is usually found


def test_decoys_follow_the_seed_and_come_from_their_own_stream() -> None:
    catalog, topology = load_catalog("online-boutique"), load_topology("online-boutique")
    scopes, services = decoy_inputs(catalog, topology)

    def plan(seed: int, decoys: int) -> tuple[object, object]:
        schedule = plan_schedule(
            app="online-boutique", entries=catalog.entries, seed=seed,
            params=ScheduleParams(decoy_count=decoys), scopes=scopes, decoy_services=services,
        )  # fmt: skip
        return schedule.activations, schedule.decoys

    assert plan(5, 12) == plan(5, 12)
    assert plan(5, 12)[1] != plan(6, 12)[1]
    # The faults are the same with or without decoys: decoys draw from a stream of their own.
    assert plan(5, 0) == (plan(5, 12)[0], ())
