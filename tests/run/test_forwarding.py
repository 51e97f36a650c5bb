"""The relays between the sandbox's loopback and the runner's endpoints: bytes get through, and a relay does
not outlive the runner that started it, however the runner ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from orchestrator.run.forwarding import UnixToTcp


def _echo_server() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(1024).upper())

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def test_a_relay_carries_bytes_from_its_unix_socket_to_the_port(tmp_path: Path) -> None:
    server, port = _echo_server()
    relay = UnixToTcp(str(tmp_path / "r.sock"), port)
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(tmp_path / "r.sock"))
            client.sendall(b"ping")
            assert client.recv(1024) == b"PING"
    finally:
        relay.close()
        server.close()
    assert not (tmp_path / "r.sock").exists()


def test_a_relay_ends_when_the_runner_that_started_it_is_killed(tmp_path: Path) -> None:
    runner = textwrap.dedent(
        f"""
        import sys, time
        from orchestrator.run.forwarding import UnixToTcp
        relay = UnixToTcp({str(tmp_path / "r.sock")!r}, 9)
        print(relay._process.pid, flush=True)
        time.sleep(600)
        """
    )
    started = subprocess.Popen([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True)
    assert started.stdout is not None
    relay_pid = int(started.stdout.readline())
    os.kill(started.pid, signal.SIGKILL)
    started.wait()
    # The relay was the killed runner's child; it is ours to reap once it has ended (it is reparented to
    # init otherwise, so poll its /proc entry).
    waited = subprocess.run(
        [sys.executable, "-c", f"import os, time\nwhile os.path.exists('/proc/{relay_pid}/status') and "
         f"'zombie' not in open('/proc/{relay_pid}/status').read():\n    time.sleep(0.05)"],
        timeout=60, check=False,
    )  # fmt: skip
    assert waited.returncode == 0
