"""Probes of faults reverted between boundaries are sampled with the next observation: the same spans as if
they had been sampled at the revert, journaled first and in the order they were deferred."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, cast

from orchestrator.bundle.records import ProbeSample, Record
from orchestrator.run.events import Ignore
from orchestrator.run.faults import LiveFault
from orchestrator.run.observing import Recorder
from orchestrator.telemetry.probes import ProbeQuery, ProbeResult
from tests.run.live_faults import live_fault

STEP_S = 30.0


class _Observer:
    """Answers each probe with one healthy sample per grid time and remembers every span it was asked."""

    namespace = "online-boutique"
    origin_epoch_s = 0.0
    evaluator = SimpleNamespace(failures=[], health=list)

    def __init__(self) -> None:
        self.asked: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def probe(self, probe: ProbeQuery, *, after: float, until: float) -> list[ProbeResult]:
        with self._lock:
            self.asked.append((probe.query, after, until))
        grid = range(int(after // STEP_S) + 1, int(until // STEP_S) + 1)
        return [ProbeResult(at=k * STEP_S, value=0.0, healthy=True) for k in grid]

    def alerts(self, *, until: float) -> list[Any]:
        return []

    def service(self, *, after: float, until: float) -> list[Any]:
        return []


def _setup() -> tuple[Recorder, _Observer, list[Record], list[LiveFault]]:
    observer = _Observer()
    records: list[Record] = []
    recorder = Recorder(observer=cast(Any, observer), client=cast(Any, None), record=records.append,
                        events=Ignore())  # fmt: skip
    faults = [
        live_fault("f1", "ob-cart-container-kill", 90.0),
        live_fault("f2", "ob-cart-redis-partition", 90.0),
        live_fault("f3", "ob-cart-container-kill", 100.0),
    ]
    for fault in faults:
        recorder.start_fault(fault)
    return recorder, observer, records, faults


def _samples(records: list[Record]) -> list[tuple[str, float]]:
    return [(r.fault_id, r.t) for r in records if isinstance(r, ProbeSample)]


def test_a_deferred_probe_is_asked_nothing_until_the_next_observation_then_journaled_first() -> None:
    recorder, observer, records, (f1, f2, f3) = _setup()
    recorder.defer_probes([f1], until=200.0)
    recorder.end_fault("f1")  # reverted at 200
    recorder.defer_probes([f3], until=230.0)
    recorder.end_fault("f3")  # reverted at 230
    assert observer.asked == [] and records == [] and recorder.deferred

    recorder.observe([f2], until=240.0)

    assert sorted(observer.asked) == sorted(
        [(f1.entry.probe.query.replace("$namespace", "online-boutique"), 90.0, 200.0),
         (f3.entry.probe.query.replace("$namespace", "online-boutique"), 100.0, 230.0),
         (f2.entry.probe.query.replace("$namespace", "online-boutique"), 90.0, 240.0)]
    )  # fmt: skip
    assert _samples(records) == [
        ("f1", 120.0), ("f1", 150.0), ("f1", 180.0),
        ("f3", 120.0), ("f3", 150.0), ("f3", 180.0), ("f3", 210.0),
        ("f2", 120.0), ("f2", 150.0), ("f2", 180.0), ("f2", 210.0), ("f2", 240.0),
    ]  # fmt: skip
    assert not recorder.deferred
    observer.asked.clear()
    recorder.observe([f2], until=300.0)  # nothing deferred is asked twice
    assert [span[1:] for span in observer.asked] == [(240.0, 300.0)]


def test_a_fault_whose_revert_failed_goes_on_from_where_its_deferred_span_ended() -> None:
    recorder, observer, records, (f1, _, _) = _setup()
    recorder.defer_probes([f1], until=200.0)  # the revert fails: the fault stays live
    recorder.observe([f1], until=240.0)
    assert [span[1:] for span in observer.asked] == [(90.0, 200.0), (200.0, 240.0)]
    assert _samples(records) == [("f1", 120.0), ("f1", 150.0), ("f1", 180.0), ("f1", 210.0), ("f1", 240.0)]


def test_deferred_probes_are_committed_on_their_own_when_no_observation_follows() -> None:
    recorder, observer, records, (f1, _, _) = _setup()
    recorder.defer_probes([f1], until=200.0)
    recorder.end_fault("f1")
    recorder.commit_deferred()
    assert [span[1:] for span in observer.asked] == [(90.0, 200.0)]
    assert _samples(records) == [("f1", 120.0), ("f1", 150.0), ("f1", 180.0)]
    assert not recorder.deferred
