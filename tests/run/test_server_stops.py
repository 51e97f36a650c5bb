"""The servers of a run (the twin's API, the tool server) are told to stop together when it ends, and only
then waited for one by one: each takes a few tenths of a second to notice and close."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from orchestrator.run.config import make_config
from orchestrator.run.events import Ignore
from orchestrator.run.plan import make_plan
from orchestrator.run.setup import open_session
from orchestrator.serving import LocalServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]


def test_every_server_of_a_run_is_told_to_stop_before_any_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int]] = []
    told, waited = LocalServer.stop_soon, LocalServer.stop

    def stop_soon(self: LocalServer) -> None:
        calls.append(("told", id(self)))
        told(self)

    def stop(self: LocalServer, *, timeout_s: float = 30.0) -> None:
        calls.append(("waited", id(self)))
        waited(self, timeout_s=timeout_s)

    monkeypatch.setattr(LocalServer, "stop_soon", stop_soon)
    monkeypatch.setattr(LocalServer, "stop", stop)
    config = make_config(
        app="online-boutique", seed=3, agent="noop", faults=1, delta_s=60, budget_s=10.0,
        injection_period_s=60, observation_period_s=60, min_duration_s=60, max_duration_s=60,
        baseline=False, quiet=True, out=tmp_path / "run", runs_root=tmp_path / "runs",
    )  # fmt: skip
    with open_session(
        config, make_plan(config), run_id="stops", run_dir=tmp_path / "run", command=[], events=Ignore(),
        stop=threading.Event(),
    ) as session:  # fmt: skip
        assert session.endpoints.tools is not None  # the tool server runs beside the twin's API server
        session.finish(session.run())
        assert calls == []
    servers = {server for _, server in calls}
    assert len(servers) == 2
    first_wait = calls.index(next(call for call in calls if call[0] == "waited"))
    assert {server for what, server in calls[:first_wait] if what == "told"} == servers
