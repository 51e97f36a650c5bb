"""Every tool call has a deadline: a handler that hangs is answered with ``deadline_exceeded``, later calls
and the next invocation are still served, and a change that finishes late is journaled all the same."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from orchestrator.bundle.records import Intervention, Record, ToolCall
from orchestrator.interface.backend import Backend
from orchestrator.interface.calls import MAX_STRAGGLERS, ToolCaller
from orchestrator.interface.server import ToolServer
from orchestrator.interface.tools import TOOLS, Tool
from tests.interface.world import World

# Long enough for an in-memory read to answer on any machine; the hanging handler never answers by itself.
DEADLINE_S = 3.0
WAIT_S = 60.0  # how long a test waits for something that must happen; never reached when it works
INCIDENT = {"incident_id": "inc-1"}


class Journal:
    """The records of one test, with a way to wait for one written by a handler's own thread."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self._changed = threading.Condition()

    def append(self, record: Record) -> None:
        with self._changed:
            self.records.append(record)
            self._changed.notify_all()

    def wait_for(self, kind: type[Record], count: int = 1) -> list[Any]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.of(kind)) >= count, timeout=WAIT_S)
            return self.of(kind)

    def of(self, kind: type[Record]) -> list[Any]:
        return [r for r in self.records if isinstance(r, kind)]


@dataclasses.dataclass
class Hang:
    """A restart_service handler that blocks until released, then reports a restart without doing one."""

    started: threading.Event = dataclasses.field(default_factory=threading.Event)
    release: threading.Event = dataclasses.field(default_factory=threading.Event)

    def __call__(self, backend: Backend, args: Any) -> tuple[dict[str, Any], list[str]]:
        self.started.set()
        self.release.wait()
        return {"service": args.service, "restarted_at": "late"}, [args.service]

    def tools(self) -> Mapping[str, Tool]:
        return {**TOOLS, "restart_service": dataclasses.replace(TOOLS["restart_service"], handler=self)}


@pytest.fixture
def hang() -> Iterator[Hang]:
    handler = Hang()
    yield handler
    handler.release.set()  # let the abandoned thread end with the test


def _caller(world: World, journal: Journal, hang: Hang, *, deadline_s: float = DEADLINE_S) -> ToolCaller:
    caller = ToolCaller(world.backend, journal.append, deadline_s=deadline_s, tools=hang.tools())
    caller.begin(0)
    return caller


def _join_handlers() -> None:
    """Wait until every handler thread has ended (and so journaled whatever it was going to)."""
    for thread in threading.enumerate():
        if thread.name.startswith("tool "):
            thread.join(WAIT_S)


def _restart(caller: ToolCaller) -> dict[str, Any]:
    return caller.call("restart_service", {**INCIDENT, "service": "cartservice"})


def test_a_hanging_handler_is_answered_at_the_deadline_and_the_next_call_is_served(
    shared_ob: World, hang: Hang
) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang)
    outcome = _restart(caller)
    assert outcome["error"]["type"] == "deadline_exceeded"
    assert "may still take effect" in outcome["error"]["message"]
    (stuck,) = journal.of(ToolCall)
    assert (stuck.tool, stuck.decision, stuck.invocation) == ("restart_service", "allowed", 0)
    assert stuck.reason.startswith("deadline_exceeded: ")
    for _ in range(3):
        served = caller.call("get_topology", {})
        assert served["ok"], served
    assert [c.decision for c in journal.of(ToolCall)] == ["allowed"] * 4
    assert journal.of(Intervention) == []  # the change has not finished, so nothing is claimed yet


def test_a_change_that_finishes_after_its_invocation_closed_is_journaled(
    shared_ob: World, hang: Hang
) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang, deadline_s=0.01)
    assert _restart(caller)["error"]["type"] == "deadline_exceeded"
    caller.begin(1)
    hang.release.set()
    (late,) = journal.wait_for(Intervention)
    assert (late.tool, late.targets, late.incident_id, late.result) == (
        "restart_service",
        ["cartservice"],
        "inc-1",
        "ok",
    )
    assert "after its 0.01 s deadline (invocation 0)" in late.detail
    assert caller.mutations == 0  # the change counted against invocation 0, not the one now open


def test_a_change_still_running_when_the_server_stops_is_journaled_with_an_unknown_outcome(
    shared_ob: World, hang: Hang
) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang, deadline_s=0.01)
    assert _restart(caller)["error"]["type"] == "deadline_exceeded"
    caller.close()
    (unfinished,) = journal.of(Intervention)
    assert unfinished.result == "error"
    assert "whether it took effect is unknown" in unfinished.detail
    hang.release.set()
    _join_handlers()
    assert len(journal.of(Intervention)) == 1  # finishing after the stop does not journal it twice
    assert caller.call("get_topology", {})["error"]["type"] == "unavailable"


def test_the_next_invocation_begins_while_a_call_still_hangs(shared_ob: World, hang: Hang) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang, deadline_s=WAIT_S)
    answers: list[dict[str, Any]] = []
    stuck = threading.Thread(target=lambda: answers.append(_restart(caller)))
    stuck.start()
    assert hang.started.wait(WAIT_S)
    caller.begin(1)  # the runner's next boundary must not wait for the agent's call
    assert stuck.is_alive() and answers == []
    hang.release.set()
    stuck.join(WAIT_S)
    assert answers[0]["ok"]
    (record,) = journal.of(ToolCall)
    assert record.invocation == 0  # journaled under the invocation that made the call


def test_too_many_handlers_past_their_deadline_refuse_new_calls(shared_ob: World, hang: Hang) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang, deadline_s=0.01)
    for _ in range(MAX_STRAGGLERS):
        assert _restart(caller)["error"]["type"] == "deadline_exceeded"
    refused = caller.call("get_topology", {})
    assert refused["error"]["type"] == "unavailable"
    assert journal.of(ToolCall)[-1].decision == "denied"
    hang.release.set()
    journal.wait_for(Intervention, count=MAX_STRAGGLERS)
    _join_handlers()
    caller.deadline_s = DEADLINE_S
    assert caller.call("get_topology", {})["ok"]


def test_over_rest_a_hanging_call_is_answered_with_deadline_exceeded_and_the_next_is_served(
    shared_ob: World, hang: Hang
) -> None:
    journal = Journal()
    server = ToolServer(shared_ob.backend, journal.append, deadline_s=DEADLINE_S, tools=hang.tools())
    _, rest_url = server.start()
    try:
        headers = {"Authorization": f"Bearer {server.open_invocation(2)}"}
        with httpx.Client(base_url=rest_url, headers=headers, timeout=WAIT_S) as http:
            stuck = http.post("/tools/restart_service", json={**INCIDENT, "service": "cartservice"})
            served = http.post("/tools/get_resources", json={"kind": "deployments", "name": "frontend"})
        assert stuck.status_code == 200
        assert stuck.json()["error"]["type"] == "deadline_exceeded"
        assert served.json()["ok"] and served.json()["result"]["items"][0]["name"] == "frontend"
        assert [(c.tool, c.invocation) for c in journal.of(ToolCall)] == [
            ("restart_service", 2),
            ("get_resources", 2),
        ]
    finally:
        server.stop()
    assert len(journal.of(Intervention)) == 1  # the stop journaled the change it left unfinished


def test_a_call_still_waiting_for_its_turn_when_its_invocation_ends_is_never_run(
    shared_ob: World, hang: Hang
) -> None:
    journal = Journal()
    caller = _caller(shared_ob, journal, hang, deadline_s=WAIT_S)
    answers: dict[str, dict[str, Any]] = {}
    first = threading.Thread(target=lambda: answers.update(first=_restart(caller)))
    first.start()
    assert hang.started.wait(WAIT_S)
    waiting = threading.Thread(
        target=lambda: answers.update(waiting=caller.call("get_topology", {}, invocation=0))
    )
    waiting.start()
    caller.end()  # the invocation's budget is over while the restart still holds the turn
    hang.release.set()
    first.join(WAIT_S)
    waiting.join(WAIT_S)
    assert answers["first"]["ok"]
    assert answers["waiting"]["error"]["type"] == "invocation_ended"
    calls = journal.of(ToolCall)
    assert [(c.tool, c.decision, c.invocation) for c in calls] == [
        ("restart_service", "allowed", 0),
        ("get_topology", "denied", 0),
    ]
    assert calls[1].reason.startswith("invocation_ended: ")
