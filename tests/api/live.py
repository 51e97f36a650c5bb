"""A ``marathon serve`` process on 127.0.0.1 for the API tests, and small helpers to drive it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TOKEN = "test-token-of-the-control-plane"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
START_TIMEOUT = 60.0
# A short twin marathon: ten faults over ten boundaries of the stepped clock.
SHORT = {"faults": 10, "injection_period_s": 600, "observation_period_s": 600}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    data: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    extra: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        self.data.mkdir(parents=True, exist_ok=True)
        log = (self.data / "serve.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "serve", "--port", str(self.port),
             "--data", str(self.data), "--token", TOKEN, "--no-nightly", *self.extra],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"marathon serve exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"marathon serve did not answer: {self.log()}")

    def log(self) -> str:
        return (self.data / "serve.log").read_text(encoding="utf-8", errors="replace")[-3000:]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30.0)

    def stop(self) -> None:
        """SIGTERM (the server stops its runs gracefully), then SIGKILL if it hangs."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()


def start_run(client: httpx.Client, **overrides: Any) -> str:
    body: dict[str, Any] = {"app": "online-boutique", "seed": 7, "agent": "noop", "baseline": False,
                            "schedule": dict(SHORT)}  # fmt: skip
    body.update(overrides)
    response = client.post("/runs", json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["id"]
    return run_id


def events(client: httpx.Client, run_id: str, *, timeout: float = 300.0) -> Iterator[dict[str, Any]]:
    """The run's server-sent events (the token's to read), parsed, until the stream's ``end``."""
    with client.stream("GET", f"/runs/{run_id}/events", headers=AUTH, timeout=timeout) as stream:
        stream.raise_for_status()
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                data = json.loads(line.split(":", 1)[1])
                if kind == "end":
                    return
                yield data


def wait_ended(client: httpx.Client, run_id: str, *, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view: dict[str, Any] = client.get(f"/runs/{run_id}").json()
        if view["status"] in ("finished", "stopped", "failed", "interrupted"):
            return view
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not end within {timeout} s")
