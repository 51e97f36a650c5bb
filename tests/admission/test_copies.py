"""Entries screened in copies of one warm twin: what a copy does stays in it, and an entry's record does not
depend on what its worker screened before."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from orchestrator.admission.copies import in_copy, serve_copy, warm_stage
from orchestrator.admission.screening import Settings, admit, jobs_for
from orchestrator.catalog.admissions import load_admission
from orchestrator.catalog.loading import load_catalog

OB = "online-boutique"


def test_what_a_copy_changes_stays_in_the_copy_and_its_result_comes_back() -> None:
    held = {"state": "warm"}

    def work() -> tuple[str, int]:
        held["state"] = "injected"
        return held["state"], 42

    assert in_copy(work) == ("injected", 42)
    assert held == {"state": "warm"}


def test_an_exception_in_a_copy_comes_back_with_its_traceback() -> None:
    def work() -> None:
        raise KeyError("no such pod")

    with pytest.raises(RuntimeError, match="KeyError: 'no such pod'"):
        in_copy(work)


class _SlowReceiver(BaseHTTPRequestHandler):
    """A remote-write receiver that takes its time, as a loaded Prometheus does."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server looks up
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(0.2)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        return


def test_a_copy_serves_its_twin_once_the_held_series_are_pushed(tmp_path: Path) -> None:
    stage = warm_stage(OB, seed=1, warmup_s=60.0, chunk_s=60.0)

    def work() -> tuple[int, int]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowReceiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/write"
        copy = serve_copy(stage, kubeconfig=tmp_path / "kubeconfig", remote_write_url=url)
        telemetry = copy.running.twin.telemetry
        served = telemetry.pushed_samples
        telemetry.flush()
        return served, telemetry.pushed_samples

    served, after_flush = in_copy(work)
    assert served > 0 and served == after_flush
    assert stage.twin.telemetry.pushed_samples == 0  # the worker's twin still holds them for the next copy


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
def test_an_entry_gets_its_committed_record_first_and_after_other_entries_of_its_worker(
    tmp_path: Path,
) -> None:
    # A config fault's copy starts after the warm-up; the chaos fault's after the window before injection,
    # whose series the copy must push before it reads them.
    catalog = load_catalog(OB)
    ids = ["ob-cart-redis-port", "ob-adservice-container-killed"]
    config, chaos = jobs_for(catalog, ids=ids, root=None, workdir=tmp_path, settings=Settings())
    again = [dataclasses.replace(job, workdir=tmp_path / "again" / job.entry.id) for job in (config, chaos)]
    records, failures = admit([config, chaos, *again], workers=1)
    assert failures == {}
    committed = load_admission(OB)
    assert committed is not None
    expected = [next(r for r in committed.entries if r.id == i) for i in ids]
    assert records == expected * 2
