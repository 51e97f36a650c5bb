"""The agent's sandbox: what an agent process can see, reach and leave behind, spawned and warm-started."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.run import sandbox as sb
from orchestrator.run import warmstart
from orchestrator.run.invoking import AgentProcess, agent_environment
from tests.processes import gone, running_with, unique_sleep

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (the test runs wherever CI is set)",
)
HERE = Path(__file__).parent


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the tool endpoint"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A loopback HTTP server standing in for the tool server."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def bystander() -> Iterator[int]:
    """Another loopback server of the machine (the twin's API, Prometheus...) that must stay out of reach."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield listener.getsockname()[1]
    listener.close()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory with the things an agent must not see beside its workspace."""
    run = tmp_path / "run"
    (run / "bundle" / "data").mkdir(parents=True)
    (run / "bundle" / "data" / "faults.jsonl").write_text('{"culprit": "cartservice"}\n')
    (run / "kubeconfig").write_text("token: admin\n")
    (run / "faults.ledger.jsonl").write_text("{}\n")
    (run / "inbox").mkdir()
    (run / "inbox" / "alerts.json").write_text("[]")
    return run


def _sandbox(run: Path, endpoint: str, **extra: object) -> sb.Sandbox:
    sandbox = sb.Sandbox(workspace=run / "workspace", inbox_dir=run / "inbox", **extra)  # type: ignore[arg-type]
    sandbox.open([endpoint])
    return sandbox


SPY = r"""
import json, os, socket, sys, urllib.request
def can_read(path):
    try:
        with open(path, 'rb') as f:
            f.read(1)
        return True
    except OSError:
        return False
def can_connect(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()
run = sys.argv[1]
seen = {
    'uid': os.getuid(),
    'cwd': os.getcwd(),
    'parent': os.listdir('..'),
    'run': {p: can_read(os.path.join(run, p))
            for p in ('bundle/data/faults.jsonl', 'kubeconfig', 'faults.ledger.jsonl')},
    'repository': os.path.exists(sys.argv[3] + '/fault_catalog') or os.path.exists(sys.argv[3] + '/tests'),
    'processes': sorted(open(f'/proc/{p}/cmdline', 'rb').read().split(b'\0')[0].decode()
                        for p in os.listdir('/proc') if p.isdigit()),
    'orchestrator_proc': os.path.exists(f'/proc/{sys.argv[4]}'),
    'init_cmdline': open('/proc/1/cmdline', 'rb').read().replace(b'\0', b' ').decode(),
    'bystander': can_connect(int(sys.argv[2])),
    'endpoint': urllib.request.urlopen(os.environ['ENDPOINT'], timeout=5).read().decode(),
    'alerts': open(os.environ['MARATHON_ALERTS']).read(),
    'alerts_writable': os.access(os.environ['MARATHON_ALERTS'], os.W_OK),
}
open('seen.json', 'w').write(json.dumps(seen))
"""


def test_a_spawned_agent_sees_its_workspace_and_its_endpoint_and_nothing_else(
    run_dir: Path, endpoint: str, bystander: int
) -> None:
    sandbox = _sandbox(run_dir, endpoint)
    try:
        repository = Path(__file__).resolve().parents[2]
        command = [sys.executable, "-c", SPY, str(run_dir), str(bystander), str(repository), str(os.getpid())]
        agent = AgentProcess(command, workspace=run_dir / "workspace", log_path=run_dir / "agent.log",
                             sandbox=sandbox)  # fmt: skip
        env = agent_environment(
            {"ENDPOINT": endpoint, "MARATHON_ALERTS": sandbox.inside(run_dir / "inbox" / "alerts.json")}
        )
        outcome = agent.invoke(1, env=env, budget_s=30.0)
    finally:
        sandbox.close()
    assert outcome.exit_code == 0, (run_dir / "agent.log").read_text()
    seen = json.loads((run_dir / "workspace" / "seen.json").read_text())
    assert seen["cwd"] == "/workspace"
    assert seen["run"] == {
        "bundle/data/faults.jsonl": False,
        "kubeconfig": False,
        "faults.ledger.jsonl": False,
    }
    assert "bundle" not in seen["parent"] and "kubeconfig" not in seen["parent"]
    assert seen["repository"] is False
    assert seen["orchestrator_proc"] is False or os.getpid() < 10  # its own PID namespace
    assert not any("pytest" in p for p in seen["processes"])
    # bwrap's own options (the binds) do not show the host paths of the workspace and inbox.
    assert str(run_dir / "workspace") not in seen["init_cmdline"]
    assert str(run_dir / "inbox") not in seen["init_cmdline"]
    assert seen["init_cmdline"].startswith(shutil.which("bwrap") or "bwrap")
    assert seen["bystander"] is False
    assert seen["endpoint"] == "hello from the tool endpoint"
    assert seen["alerts"] == "[]" and seen["alerts_writable"] is False
    if os.geteuid() == 0:
        assert seen["uid"] == sb.AGENT_UID
    else:
        assert seen["uid"] == os.getuid()


def test_processes_that_left_the_agents_process_group_die_with_the_invocation(
    run_dir: Path, endpoint: str
) -> None:
    marker, other = unique_sleep(), unique_sleep()
    script = (f"setsid bash -c 'echo $$ > escaped.pid; exec {marker}' & nohup {other} >/dev/null & "
              "while [ ! -s escaped.pid ]; do sleep 0.05; done; echo > started; sleep 60")  # fmt: skip
    sandbox = _sandbox(run_dir, endpoint)
    try:
        agent = AgentProcess(["bash", "-c", script], workspace=run_dir / "workspace",
                             log_path=run_dir / "agent.log", sandbox=sandbox)  # fmt: skip
        outcome = agent.invoke(1, env=agent_environment({}), budget_s=2.0)
    finally:
        sandbox.close()
    assert outcome.timed_out
    assert (run_dir / "workspace" / "started").exists()  # the escape had happened before the budget ran out
    assert gone(*running_with(marker), *running_with(other))
    assert running_with(marker) == [] and running_with(other) == []


def test_the_sandbox_refuses_an_unknown_path() -> None:
    sandbox = sb.Sandbox(workspace=Path("/srv/ws"), inbox_dir=Path("/srv/inbox"))
    assert sandbox.inside(Path("/srv/ws/notes.md")) == "/workspace/notes.md"
    assert sandbox.inside(Path("/srv/inbox/alerts.json")) == "/run/marathon/inbox/alerts.json"
    with pytest.raises(ValueError):
        sandbox.inside(Path("/srv/bundle/data/faults.jsonl"))


def test_a_missing_bwrap_refuses_the_run_with_a_line_that_names_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sb.SandboxUnavailable) as caught:
        sb.probe(tmp_path)
    assert "bwrap is not installed" in str(caught.value.problems[0])
    assert "--unsandboxed" in str(caught.value.problems[0])


@pytest.fixture
def warm_sandboxed(run_dir: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentProcess]:
    """A warm-started probe agent inside the sandbox (its module's folder is bound read-only)."""
    monkeypatch.setattr(warmstart, "AGENTS_PACKAGE", "warm_probe_")
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    sandbox = _sandbox(run_dir, endpoint, readonly=(HERE,))
    agent = AgentProcess([sys.executable, "-m", "warm_probe_agent"], workspace=run_dir / "workspace",
                         log_path=run_dir / "agent.log", sandbox=sandbox)  # fmt: skip
    yield agent
    agent.close()
    sandbox.close()


def test_a_warm_started_agent_runs_inside_the_sandbox_and_its_escaped_children_are_swept(
    run_dir: Path, warm_sandboxed: AgentProcess
) -> None:
    agent = warm_sandboxed
    marker = unique_sleep()
    first = agent.invoke(
        1, env=agent_environment({"PROBE_MODE": "escape", "PROBE_SLEEP": marker}), budget_s=30.0
    )
    assert first.exit_code == 3, (run_dir / "agent.log").read_text()
    started = json.loads((run_dir / "workspace" / "started.json").read_text())
    assert started["cwd"] == "/workspace"
    assert started["env"]["HOME"] == "/workspace"
    if os.geteuid() == 0:
        assert started["uid"] == sb.AGENT_UID
    assert (run_dir / "workspace" / "escaped.pid").exists()
    assert gone(*running_with(marker)) and running_with(marker) == []
    (run_dir / "workspace" / "escaped.pid").unlink()
    hang = {"PROBE_MODE": "escape-hang", "PROBE_SLEEP": marker}
    second = agent.invoke(2, env=agent_environment(hang), budget_s=3.0)
    assert second.timed_out
    assert (run_dir / "workspace" / "escaped.pid").exists()
    assert gone(*running_with(marker)) and running_with(marker) == []
    log = (run_dir / "agent.log").read_text()
    assert "warm start failed" not in log
    assert agent._template is not None  # the template served both invocations


FETCH = r"""
import os, urllib.request
open('fetched.txt', 'w').write(urllib.request.urlopen(os.environ['ENDPOINT'], timeout=5).read().decode())
"""


def test_a_server_of_the_run_listens_on_the_sandboxs_socket_itself_with_no_relay_between(
    run_dir: Path,
) -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from orchestrator.serving import serve_locally

    async def hello(_request: object) -> PlainTextResponse:
        return PlainTextResponse("hello over the run's own socket")

    app = Starlette(routes=[Route("/", hello)])
    sandbox = sb.Sandbox(workspace=run_dir / "workspace", inbox_dir=run_dir / "inbox")
    path = sandbox.socket_path("tools")
    server = serve_locally(app, name="a server of the run", lifespan="off", unix_socket=path)
    try:
        url = f"{server.url}/"
        sandbox.open([url], served={url: path})
        assert sandbox._relays == []  # nothing but the server itself stands behind the socket
        assert (path.stat().st_mode & 0o777) == 0o666  # the agent's uid may connect
        agent = AgentProcess([sys.executable, "-c", FETCH], workspace=run_dir / "workspace",
                             log_path=run_dir / "agent.log", sandbox=sandbox)  # fmt: skip
        outcome = agent.invoke(1, env=agent_environment({"ENDPOINT": url}), budget_s=30.0)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass  # and it still serves on its port, for callers outside the sandbox
    finally:
        server.stop()
        sandbox.close()
    assert outcome.exit_code == 0, (run_dir / "agent.log").read_text()
    assert (run_dir / "workspace" / "fetched.txt").read_text() == "hello over the run's own socket"
    assert not path.exists()


def test_a_served_socket_outside_the_sandboxs_folder_is_refused(run_dir: Path, tmp_path: Path) -> None:
    sandbox = sb.Sandbox(workspace=run_dir / "workspace", inbox_dir=run_dir / "inbox")
    try:
        with pytest.raises(ValueError, match="not in the sandbox's folder of sockets"):
            sandbox.open(["http://127.0.0.1:9/"], served={"http://127.0.0.1:9/": tmp_path / "elsewhere.sock"})
    finally:
        sandbox.close()
