"""``marathon serve`` with a port it cannot have: one line, exit 2, and nothing created."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _serve(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "orchestrator.cli", "serve", "--data", str(tmp_path / "data"), *argv]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path, port: str) -> None:
    done = _serve(tmp_path, "--port", port)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(f"'{port}' is not a TCP port (0-65535)")
    assert "Traceback" not in done.stderr and not (tmp_path / "data").exists()


def test_a_port_in_use_is_one_line_naming_it_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path, "--port", str(port), "--no-nightly")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"marathon: error: cannot serve: command line: --port = {port}: cannot listen on 127.0.0.1:{port}: "
        "Address already in use"
    ]
    assert done.stdout == "" and not (tmp_path / "data").exists()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_gracefully_with_exit_0(tmp_path: Path, stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--data", str(tmp_path / "data"), "--port", "0",
         "--no-nightly"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    first = process.stdout.readline()  # printed once the socket listens and the app is built
    assert first.startswith("marathon control plane at http://127.0.0.1:"), first
    process.send_signal(stop)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.strip() == f"marathon control plane stopped ({stop.name})"
    assert "Traceback" not in err
