from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import alive, gone

STARTER = """
import sys, time
from pathlib import Path
from orchestrator.telemetry.server import start_prometheus
server = start_prometheus(Path(sys.argv[1]))
print(server.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(
    shutil.which("setpriv") is None or shutil.which("prometheus") is None, reason="needs setpriv"
)
def test_prometheus_stops_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    assert alive(pid)
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    survived = not gone(pid, within=30)
    if survived:
        os.kill(pid, signal.SIGTERM)
    assert not survived, f"prometheus {pid} outlived the process that started it"


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus")
def test_ctrl_c_at_the_terminal_leaves_the_runs_prometheus_to_the_run(tmp_path: Path) -> None:
    # The starter stands for a run that handles Ctrl-C itself (a clean stop that still queries Prometheus).
    ignoring = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n" + STARTER
    starter = subprocess.Popen(
        [sys.executable, "-c", ignoring, str(tmp_path)], stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # a process group of its own, as a terminal's foreground job has
    )  # fmt: skip
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    try:
        os.killpg(starter.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
        time.sleep(1.0)
        assert starter.poll() is None
        assert alive(pid), "Ctrl-C reached the run's Prometheus"
    finally:
        starter.kill()
        starter.wait()
        if alive(pid):  # without setpriv nothing else ends it
            os.kill(pid, signal.SIGTERM)
