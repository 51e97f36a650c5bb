"""The twin emits the series contract (orchestrator/vocabulary/series.py): no series outside it, the labels
it declares, and every gauge of each datastore's exporter."""

from __future__ import annotations

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.topology import Topology
from orchestrator.twin.boot import Twin
from orchestrator.twin.observe.metrics import Sample
from orchestrator.vocabulary.series import CADVISOR, EXPORTERS, KUBE_STATE_METRICS, SPAN_METRICS, series_names

DECLARED = {series.name: set(series.labels) for series in SPAN_METRICS + KUBE_STATE_METRICS + CADVISOR}


@pytest.fixture(scope="module", params=app_names())
def emitted(request: pytest.FixtureRequest) -> tuple[Topology, list[Sample]]:
    twin = Twin(request.param, seed=1)
    twin.advance(60.0)
    return twin.topology, twin.samples()


def test_every_series_the_twin_emits_is_in_the_contract_with_the_labels_it_declares(
    emitted: tuple[Topology, list[Sample]],
) -> None:
    _topology, samples = emitted
    assert {name for name, _labels, _value in samples} <= series_names()
    for name, labels, _value in samples:
        if name in DECLARED:
            assert {key for key, _ in labels} - {"namespace"} == DECLARED[name], name


def test_each_datastore_with_an_exporter_publishes_every_gauge_of_it(
    emitted: tuple[Topology, list[Sample]],
) -> None:
    topology, samples = emitted
    by_service: dict[str, set[str]] = {}
    for name, labels, _value in samples:
        service = dict(labels).get("service")
        if service is not None:
            by_service.setdefault(service, set()).add(name)
    for service in topology.services:
        exporter = EXPORTERS.get(service.datastore_kind or "")
        if exporter is None:
            continue
        gauges = {gauge.series for gauge in exporter.gauges}
        assert gauges <= by_service.get(service.name, set()), service.name
