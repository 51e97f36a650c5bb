"""The live events' one JSON form: each event type serialises to the dict the event log keeps and the SSE
stream and the dashboard read, a failure has one shape whatever failed, and events cross the worker's pipe."""

from __future__ import annotations

import pickle
from typing import Any

from orchestrator.run.events import (
    EVENT_TYPES,
    Alert,
    Boundary,
    Concurrency,
    Ended,
    Event,
    Failed,
    Finished,
    Identified,
    Injected,
    Interrupted,
    Invoked,
    Phase,
    Reverted,
    ServicePoint,
    Started,
    Stopping,
    wire,
)

EXAMPLES: list[tuple[Event, dict[str, Any]]] = [
    (Concurrency(t=125.0, active=2, firing=1), {"type": "concurrency", "t": 125.0, "active": 2, "firing": 1}),
    (Boundary(k=3, of=15, t=180.0), {"type": "boundary", "k": 3, "of": 15, "t": 180.0}),
    (
        Invoked(n=3, start_s=180.0, end_s=181.5, exit_code=0, timed_out=False, wall_s=1.234, tool_calls=4),
        {
            "type": "invocation",
            "n": 3,
            "start_s": 180.0,
            "end_s": 181.5,
            "exit_code": 0,
            "timed_out": False,
            "wall_s": 1.234,
            "tool_calls": 4,
        },
    ),
    (
        Injected(
            fault_id="f001",
            catalog_id="ob-cart-redis-port",
            t=120.0,
            category="configuration",
            target="cartservice",
        ),
        {
            "type": "injected",
            "fault_id": "f001",
            "catalog_id": "ob-cart-redis-port",
            "t": 120.0,
            "category": "configuration",
            "target": "cartservice",
        },
    ),
    (
        Reverted(fault_id="f001", t=480.0, outcome="changed_by_agent"),
        {"type": "reverted", "fault_id": "f001", "t": 480.0, "outcome": "changed_by_agent"},
    ),
    (
        Alert(
            alert_id="a1b2", rule="ServiceErrorRatioCritical", state="firing", service="cartservice", t=150.0
        ),
        {
            "type": "alert",
            "alert_id": "a1b2",
            "rule": "ServiceErrorRatioCritical",
            "state": "firing",
            "service": "cartservice",
            "t": 150.0,
        },
    ),
    (
        Ended(t=1800.0, reason="completed", unreverted=("f002: FAILED: still there",)),
        {"type": "ended", "t": 1800.0, "reason": "completed", "unreverted": ["f002: FAILED: still there"]},
    ),
    (
        Started(app="online-boutique", agent="runbook", seed=42),
        {"type": "started", "app": "online-boutique", "agent": "runbook", "seed": 42},
    ),
    (
        Identified(run_id="online-boutique-s42-runbook-0123456789ab", run_dir="/runs/x"),
        {"type": "identified", "run_id": "online-boutique-s42-runbook-0123456789ab", "run_dir": "/runs/x"},
    ),
    (Phase(name="warm-up"), {"type": "phase", "name": "warm-up"}),
    (Stopping(), {"type": "stopping"}),
    (Finished(status="finished"), {"type": "finished", "status": "finished"}),
    (Interrupted(recovery="1 reverted"), {"type": "interrupted", "recovery": "1 reverted"}),
    (ServicePoint(t=15.0, q=2.0, e=0.5), {"type": "service", "t": 15.0, "q": 2.0, "e": 0.5}),
]


def test_each_event_has_the_wire_form_the_event_stream_and_the_dashboard_read() -> None:
    for event, expected in EXAMPLES:
        assert wire(event) == expected


def test_every_event_type_has_an_example_and_a_type_of_its_own() -> None:
    assert sorted(wire(event)["type"] for event, _ in EXAMPLES) == sorted(set(EVENT_TYPES) - {"failed"})
    assert len(set(EVENT_TYPES)) == len(EVENT_TYPES)


def test_a_failure_has_one_shape_whatever_failed() -> None:
    failures = [
        Failed(operation="injection", error="the API refused the patch", fault_id="f000", catalog_id="ob-x"),
        Failed(operation="revert", error="API down", fault_id="f000", catalog_id="ob-x"),
        Failed(operation="observation", error="Prometheus at http://127.0.0.1:9 unreachable"),
        Failed(operation="baseline", error="the baseline run failed"),
    ]
    shapes = {tuple(sorted(wire(failure))) for failure in failures}
    assert shapes == {("catalog_id", "error", "fault_id", "operation", "type")}
    assert wire(failures[2]) == {
        "type": "failed",
        "operation": "observation",
        "error": "Prometheus at http://127.0.0.1:9 unreachable",
        "fault_id": None,
        "catalog_id": None,
    }


def test_events_cross_the_worker_pipe_unchanged() -> None:
    for event, _ in EXAMPLES:
        copy = pickle.loads(pickle.dumps(event))
        assert copy == event and type(copy) is type(event)
