"""The scripted querier the tests share stands where Prometheus stands and answers as the tests script it."""

from __future__ import annotations

import pytest

from orchestrator.telemetry.alerts import Sample
from orchestrator.telemetry.fake import FakeQuerier
from orchestrator.telemetry.querying import Querier, RangeSeries


def test_the_fake_satisfies_the_querier_seam_and_records_every_request() -> None:
    fake = FakeQuerier(instants={"up": 1.0}, ranges={"rate(": lambda t: None if t < 30 else t})
    querier: Querier = fake  # mypy checks that the fake satisfies the seam
    assert querier.instant('up{job="x"}', at=5.0) == [Sample(labels={}, value=1.0)]
    assert querier.range("rate(x[1m])", start=0.0, end=60.0, step=15.0) == [
        RangeSeries(labels={}, points=((30.0, 30.0), (45.0, 45.0), (60.0, 60.0)))
    ]
    assert querier.range("other", start=0.0, end=60.0, step=15.0) == []
    assert fake.instant_calls == [('up{job="x"}', 5.0)]
    assert [call[0] for call in fake.range_calls] == ["rate(x[1m])", "other"]


def test_an_unscripted_instant_query_is_refused_only_when_asked_to() -> None:
    assert FakeQuerier().instant("up", at=0.0) == []
    with pytest.raises(LookupError, match="up"):
        FakeQuerier(refuse_unscripted=True).instant("up", at=0.0)
    assert FakeQuerier(instants={"up": None}, refuse_unscripted=True).instant("up", at=0.0) == []
