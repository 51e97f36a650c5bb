"""A flush begun now waits, when asked, for what was scraped before it and for nothing after it, from the
pushing child and from the twin's own thread alike; a failed push is raised by that wait."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.telemetry import SCRAPES_PER_PUSH, Telemetry

PATIENCE_S = 60.0  # only a broken wait takes this long: a bound on a hang, not a race with the machine


class _Gate:
    """A remote-write endpoint that answers its n-th request only once ``release(n)`` was called."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.received = [threading.Event() for _ in range(8)]
        self._released = [threading.Event() for _ in range(8)]
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server looks up
                body = self.rfile.read(int(self.headers["Content-Length"]))
                n = len(gate.bodies)
                gate.bodies.append(body)
                gate.received[n].set()
                gate._released[n].wait()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/write"

    def release(self, n: int) -> None:
        self._released[n].set()

    def release_all(self) -> None:
        for event in self._released:
            event.set()


@contextmanager
def _gate() -> Iterator[_Gate]:
    gate = _Gate()
    threading.Thread(target=gate.server.serve_forever, daemon=True).start()
    try:
        yield gate
    finally:
        gate.release_all()
        gate.server.shutdown()
        gate.server.server_close()


def _telemetry(url: str, *, child: bool) -> Telemetry:
    if child:
        return Telemetry(remote_write_url=url)
    own = Telemetry(remote_write_url=None)
    own.hold()
    own.send_to(url)  # nothing held: it pushes from a thread of this process
    return own


@pytest.mark.parametrize("child", [True, False], ids=["child", "own-thread"])
def test_the_wait_ends_once_what_came_before_is_posted_whatever_comes_after(child: bool) -> None:
    with _gate() as gate:
        telemetry = _telemetry(gate.url, child=child)
        try:
            telemetry.scrape(0.0, [("up", (("pod", "a"),), 1.0)])
            wait = telemetry.flush_begin()
            for k in range(1, SCRAPES_PER_PUSH + 1):  # a whole push after it, handed over as scraped
                telemetry.scrape(15.0 * k, [("up", (("pod", "a"),), float(k))])
            waiting = threading.Thread(target=wait)
            waiting.start()
            assert gate.received[0].wait(PATIENCE_S)
            assert waiting.is_alive()  # the first request is not answered yet
            gate.release(0)
            waiting.join(PATIENCE_S)  # returns while the later push is held unanswered
            assert not waiting.is_alive()
            assert gate.received[1].wait(PATIENCE_S)
            assert len(gate.bodies) == 2
            gate.release(1)
            telemetry.flush()
            assert (telemetry.requests, telemetry.pushed_samples) == (2, SCRAPES_PER_PUSH + 1)
        finally:
            gate.release_all()
            telemetry.close()


@pytest.mark.parametrize("child", [True, False], ids=["child", "own-thread"])
def test_a_failed_push_is_raised_by_the_wait_once(child: bool) -> None:
    telemetry = _telemetry("http://127.0.0.1:9/api/v1/write", child=child)
    try:
        telemetry.scrape(0.0, [("up", (("pod", "a"),), 1.0)])
        wait = telemetry.flush_begin()
        with pytest.raises(TelemetryError, match="remote write to http://127.0.0.1:9/api/v1/write failed"):
            wait()
        telemetry.flush_begin()()  # the error was told once
    finally:
        telemetry.close()
