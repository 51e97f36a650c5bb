"""A boundary's observation in two parts: the alerts, which the agent's invocation waits for, and then the
probes and the entry point's samples, which are queried after the alerts (while the agent runs) and
journaled before anything else of the probe stream."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, cast

import pytest

from orchestrator.bundle.records import AlertRecord, ProbeSample, Record, ServiceSample
from orchestrator.errors import TelemetryError
from orchestrator.run.events import Ignore
from orchestrator.run.faults import LiveFault
from orchestrator.run.observing import Recorder
from orchestrator.telemetry.alerts import EvaluatedAlert
from orchestrator.telemetry.probes import ProbeQuery, ProbeResult, ServiceReading
from tests.run.live_faults import live_fault

WAIT_S = 30.0  # only a broken implementation waits this long


class _Observer:
    """Holds the alerts' answer until ``release`` is set; notes when the alerts are answered and when the
    other queries begin."""

    namespace = "online-boutique"
    origin_epoch_s = 0.0

    def __init__(self, *, fail_alerts: bool = False) -> None:
        self.release = threading.Event()
        self.begun: list[str] = []
        self.fail_alerts = fail_alerts
        self.evaluator = SimpleNamespace(failures=[], health=list)
        self._lock = threading.Lock()

    def _begin(self, what: str) -> None:
        with self._lock:
            self.begun.append(what)

    def alerts(self, *, until: float) -> list[EvaluatedAlert]:
        assert self.release.wait(WAIT_S)
        self._begin("alerts")  # answered
        if self.fail_alerts:
            raise TelemetryError("the rule queries failed")
        return [
            EvaluatedAlert(id="a1", rule="R", state="firing", labels={}, annotations={}, active_at=0.0,
                           starts_at=60.0, ends_at=None, value=1.0)
        ]  # fmt: skip

    def probe(self, probe: ProbeQuery, *, after: float, until: float) -> list[ProbeResult]:
        self._begin("probe")
        return [ProbeResult(at=until, value=1.0, healthy=True)]

    def service(self, *, after: float, until: float) -> list[ServiceReading]:
        self._begin("service")
        return [ServiceReading(at=until, namespace=self.namespace, service="frontend", q=1.0, e=0.0, l=0.1)]


def _recorder(observer: _Observer) -> tuple[Recorder, list[Record], LiveFault]:
    records: list[Record] = []
    recorder = Recorder(observer=cast(Any, observer), client=cast(Any, None), record=records.append,
                        events=Ignore())  # fmt: skip
    fault = live_fault("f1", "ob-cart-container-kill", 30.0)
    recorder.start_fault(fault)
    return recorder, records, fault


def _kinds(records: list[Record]) -> list[str]:
    return [type(r).__name__ for r in records]


def test_the_probes_and_service_are_queried_after_the_alerts_and_journaled_apart() -> None:
    observer = _Observer()
    recorder, records, fault = _recorder(observer)
    observation = recorder.start([fault], until=120.0)
    threading.Timer(0.05, observer.release.set).start()  # the order below holds however late it comes

    recorder.commit_alerts(observation)

    assert _kinds(records) == ["AlertRecord"]
    assert set(recorder.firing) == {"a1"}
    recorder.commit_samples(observation)
    assert observer.begun[0] == "alerts" and sorted(observer.begun[1:]) == ["probe", "service"]
    assert _kinds(records) == ["AlertRecord", "ProbeSample", "ServiceSample"]
    assert recorder.service_until == 120.0
    recorder.commit_samples(observation)  # once only
    assert len(records) == 3


def test_commit_is_both_parts_with_the_same_records() -> None:
    split_observer, whole_observer = _Observer(), _Observer()
    split, split_records, split_fault = _recorder(split_observer)
    whole, whole_records, whole_fault = _recorder(whole_observer)
    split_observer.release.set()
    whole_observer.release.set()

    observation = split.start([split_fault], until=120.0)
    split.commit_alerts(observation)
    split.commit_samples(observation)
    whole.commit(whole.start([whole_fault], until=120.0))

    assert split_records == whole_records
    assert [type(r) for r in whole_records] == [AlertRecord, ProbeSample, ServiceSample]


def test_failed_alerts_abandon_the_rest_of_the_observation() -> None:
    observer = _Observer(fail_alerts=True)
    recorder, records, fault = _recorder(observer)
    observer.release.set()
    observation = recorder.start([fault], until=120.0)
    with pytest.raises(TelemetryError, match="rule queries failed"):
        recorder.commit_alerts(observation)
    recorder.commit_samples(observation)
    assert records == [] and recorder.service_until == 0.0
    assert observation.settled
