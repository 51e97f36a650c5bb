"""A twin's pushes encoded and posted by its child process are those its own process would post, errors
come back as they would, and the child ends with the twin's telemetry or its process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import cramjam
import pytest

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe import pusher
from orchestrator.twin.observe.metrics import Key
from orchestrator.twin.observe.remote_write import Push
from orchestrator.twin.observe.telemetry import SCRAPES_PER_PUSH, STALE_NAN, Telemetry
from tests.twin.twin_support import write_receivers, written_by

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def receivers() -> Iterator[list[tuple[str, list[bytes]]]]:
    with write_receivers(2) as found:
        yield found


def _lists() -> Iterator[list[Key]]:
    """Lists of series as a scraper hands them: the same list object while nothing changes, a new one when
    series come, go or move, and one that lists a series twice."""
    base: list[Key] = [("m", (("i", f"{i:03d}"), ("pod", f"p-{i % 7}"))) for i in range(60)]
    grown = base[:20] + [("m", (("i", "new"), ("pod", "q"))), ("n", ())] + base[20:]
    shrunk = [key for key in grown if key not in (base[3], base[41])]
    moved = [*shrunk[:5], shrunk[30], *shrunk[5:30], *shrunk[31:]]
    twice = [*moved[:10], moved[4], *moved[10:]]
    again = [(name, tuple(labels)) for name, labels in base]  # equal series, other key objects
    for keys in (base, grown, shrunk, moved, twice, list(moved), base[:7], again):
        for _ in range(5):
            yield list(keys) if keys is twice else keys


def _value(k: int, i: int) -> float:
    choices = (0.0, -0.0, 1.5, float("inf"), -3e-300, STALE_NAN, float(k * i), 2.0**60)
    return choices[(k + i) % len(choices)]


@pytest.mark.parametrize("numbered", [pusher.MAX_NUMBERED, 100])
def test_the_child_writes_what_the_twin_s_own_process_writes_new_series_in_the_same_order(
    receivers: list[tuple[str, list[bytes]]], numbered: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child may post a push's requests side by side, and cut them otherwise than the own process (a
    series whose key object is new to it is posted with the new series): every series and sample arrives
    once all the same, and series arrive for the first time in the same order."""
    monkeypatch.setattr(pusher, "MAX_NUMBERED", numbered)  # 100: the numbering starts afresh often
    derived: list[pusher.Derivation] = []
    encode = pusher._derivation
    monkeypatch.setattr(pusher, "_derivation", lambda d, distinct: derived.append(d) or encode(d, distinct))
    (child_url, child_bodies), (own_url, own_bodies) = receivers
    child = Telemetry(remote_write_url=child_url)
    own = Telemetry(remote_write_url=None)
    own.hold()
    own.send_to(own_url)  # nothing held: it pushes from a thread of this process from the start
    try:
        for k, keys in enumerate(_lists()):
            for telemetry in (child, own):
                telemetry.record(15.0 * k, list(keys), [_value(k, i) for i in range(len(keys))])
            if k % (SCRAPES_PER_PUSH + 3) == 5:  # pushes of fewer scrapes, as an advance's flush makes
                child.flush()
                own.flush()
        child.flush()
        own.flush()
    finally:
        child.close()
        own.close()
    assert len(child_bodies) > 5
    # Told by their changes: the lists grown (2 series not in the list before), shrunk, moved, cut to 7 (1)
    # and grown again (53), and the two after a list with stale series. Told in full: the first, the one
    # that repeats a series and the one after it (compared as sets).
    assert len(derived) == 7 and sum(len(d.fresh) for d in derived) == 2 + 1 + 53
    assert written_by(child_bodies) == written_by(own_bodies)
    assert child.pushed_samples == own.pushed_samples
    assert child.requests == len(child_bodies)
    assert own.requests == len(own_bodies)
    assert child.digest == own.digest


def test_requests_that_may_create_series_go_first_one_at_a_time_and_the_rest_side_by_side() -> None:
    """The receiver holds each of the first two requests of the rest until the other is in flight: they can
    only both arrive if they are posted side by side (a barrier that breaks fails the test instead)."""
    both = threading.Barrier(2, timeout=30)
    rest = [b"rest-0", b"rest-1", b"rest-2"]

    def held(body: bytes) -> None:
        if bytes(cramjam.snappy.decompress_raw(body)) in rest[:2]:
            both.wait()

    with write_receivers(1, before=held) as found:
        url, bodies = found[0]
        posts = pusher._Posts(url, workers=pusher.POST_WORKERS)
        try:
            assert posts.post(Push(ordered=[b"new-0", b"new-1"], rest=rest)) == 5
        finally:
            posts.close()
    arrived = [bytes(cramjam.snappy.decompress_raw(body)) for body in bodies]
    assert arrived[:2] == [b"new-0", b"new-1"]
    assert sorted(arrived[2:]) == rest


def test_a_failed_push_raises_at_the_flush_after_it_and_then_pushes_resume() -> None:
    telemetry = Telemetry(remote_write_url="http://127.0.0.1:9/api/v1/write")
    try:
        telemetry.scrape(0.0, [("up", (("pod", "a"),), 1.0)])
        with pytest.raises(TelemetryError, match="remote write to http://127.0.0.1:9/api/v1/write failed"):
            telemetry.flush()
        telemetry.flush()  # the error was told once
        assert (telemetry.requests, telemetry.pushed_samples) == (0, 0)
    finally:
        telemetry.close()


def _gone(pid: int, *, within_s: float) -> bool:
    """Whether process ``pid`` has ended (a zombie left to its new parent counts as ended)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_child_ends_when_the_telemetry_closes(receivers: list[tuple[str, list[bytes]]]) -> None:
    url, bodies = receivers[0]
    telemetry = Telemetry(remote_write_url=url)
    child = telemetry._child
    assert child is not None
    pid = child.pid
    for k in range(SCRAPES_PER_PUSH):  # one push handed over, as in the thread it is posted before the end
        telemetry.scrape(15.0 * k, [("up", (("pod", "a"),), float(k))])
    telemetry.close()
    assert _gone(pid, within_s=0.1)
    assert len(bodies) == 1
    assert telemetry.requests == 1 and telemetry.pushed_samples == SCRAPES_PER_PUSH


def test_the_child_ends_when_the_twin_s_process_is_gone(receivers: list[tuple[str, list[bytes]]]) -> None:
    url, _ = receivers[0]
    script = (
        "import os, sys\n"
        "from orchestrator.twin.observe.telemetry import Telemetry\n"
        f"telemetry = Telemetry(remote_write_url={url!r})\n"
        "print(telemetry._child.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == -9, done.stderr
    assert _gone(int(done.stdout), within_s=10.0)
