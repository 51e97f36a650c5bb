"""``marathon twin serve`` and the realtime clock: the world moves on its own, the advance route refuses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from orchestrator.twin.apiserver.kubeconfig import read_credentials
from orchestrator.twin.launch import start_twin
from orchestrator.twin.timefmt import FIXED_EPOCH, parse_rfc3339

pytestmark = pytest.mark.slow
WAIT_S = 60.0  # a generous bound for a loaded CI machine; no speed is asserted


def test_the_realtime_clock_advances_the_world_without_being_asked(tmp_path: Path) -> None:
    twin = start_twin(
        "online-boutique", seed=2, kubeconfig=tmp_path / "kubeconfig", clock="realtime", speed=50.0
    )
    try:
        deadline = time.monotonic() + WAIT_S
        while twin.twin.now < 10.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert twin.twin.now >= 10.0
        refused = httpx.post(
            f"{twin.url}/twin/v1/advance",
            json={"seconds": 5},
            headers=twin.credentials.headers,
            verify=twin.credentials.ssl_context(),
        )
        assert refused.status_code == 409
    finally:
        twin.stop()
    assert twin.twin_error is None


def test_marathon_twin_serve_answers_kubectl_style_requests_and_advances_on_request(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    before = datetime.now(UTC).replace(microsecond=0)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "twin",
            "serve",
            "--app",
            "online-boutique",
            "--clock",
            "stepped",
            "--seed",
            "4",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "serving at https://127.0.0.1:" in first, first + (
            process.stderr.read() if process.stderr else ""
        )
        url = first.split("serving at ", 1)[1].split()[0]
        assert kubeconfig.stat().st_mode & 0o777 == 0o600
        credentials = read_credentials(kubeconfig)
        token = credentials.token
        with httpx.Client(
            base_url=url, headers=credentials.headers, verify=credentials.ssl_context(), timeout=60
        ) as http:
            moved = http.post("/twin/v1/advance", json={"seconds": 60}).json()
            assert moved["now"] == 60.0
            pods = http.get("/api/v1/namespaces/online-boutique/pods").json()
            assert len(pods["items"]) == 12
            # A served twin lives at the wall-clock now, as a real cluster does: its objects are of today
            # (the stepped clock has moved 60 s past the wall clock since it started).
            created = {parse_rfc3339(pod["metadata"]["creationTimestamp"]) for pod in pods["items"]}
            after = datetime.now(UTC) + timedelta(seconds=moved["now"])
            assert all(before <= FIXED_EPOCH + timedelta(seconds=t) <= after for t in created), created
            assert http.post("/twin/v1/advance", json={"seconds": -1}).status_code == 422
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    printed = first + process.stdout.read()
    assert "advance with:" in printed and "curl --cacert ca.crt" in printed
    assert token not in printed  # what it prints may end up in logs; the token stays in the kubeconfig
