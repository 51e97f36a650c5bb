"""A stepped twin in its own process (``marathon twin serve --clock stepped``), moved over HTTP.

For a test that must kill a twin outright, as a crash would, while another process recovers what it
journaled. The child writes its kubeconfig (the CA its HTTPS server's certificate comes from, the bearer
token it wants) before it says where it serves; the parent reads both from there.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from orchestrator.errors import ClusterError, ConfigError
from orchestrator.twin.apiserver.kubeconfig import Credentials, read_credentials

START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
_SERVING = re.compile(r"serving at (https://127\.0\.0\.1:\d+)")


@dataclass
class TwinProcess:
    """A twin served by a child process; ``advance`` moves its stepped clock, ``stop`` ends it by its PID."""

    app: str
    url: str
    kubeconfig: Path
    process: subprocess.Popen[str] = field(repr=False)
    credentials: Credentials = field(repr=False)
    now: float = 0.0
    _http: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._http = httpx.Client(
            timeout=300.0, headers=self.credentials.headers, verify=self.credentials.ssl_context()
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def advance(self, seconds: float) -> float:
        """Move the twin ``seconds`` forward (whole steps); returns the simulated time reached."""
        if seconds <= 0:
            return self.now
        try:
            response = self._http.post(f"{self.url}/twin/v1/advance", json={"seconds": seconds})
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise ClusterError(
                f"twin of {self.app} at {self.url}: advance {seconds} s failed: {exc}"
            ) from exc
        self.now = float(response.json()["now"])
        return self.now

    def advance_to(self, t: float) -> float:
        return self.advance(t - self.now)

    def stop(self) -> None:
        """End the child by its PID and reap it. A stepped twin keeps nothing worth a graceful shutdown,
        so it is killed outright rather than waiting for its server to drain."""
        self._http.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=STOP_TIMEOUT)

    def __enter__(self) -> TwinProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def spawn_twin(
    app: str, *, seed: int, workdir: Path, remote_write_url: str | None = None
) -> subprocess.Popen[str]:
    """Start ``marathon twin serve`` for ``app`` on the stepped clock; ``attach_twin`` waits for it."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "orchestrator.cli",
        "twin",
        "serve",
        "--app",
        app,
        "--clock",
        "stepped",
        "--seed",
        str(seed),
        "--kubeconfig",
        str(workdir / "kubeconfig"),
        "--fixed-epoch",  # this process reads the twin's series and logs at the fixed epoch
    ]
    if remote_write_url is not None:
        command += ["--remote-write", remote_write_url]
    with (workdir / "twin.log").open("w", encoding="utf-8") as log:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, cwd=workdir)


def attach_twin(process: subprocess.Popen[str], *, app: str, workdir: Path) -> TwinProcess:
    """Wait until the spawned twin prints where it serves; stop it and explain if it never does."""
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        found = _SERVING.search(line)
        if found:
            kubeconfig = workdir / "kubeconfig"
            try:
                credentials = read_credentials(kubeconfig)
            except ConfigError as exc:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)
                raise ClusterError(f"the twin of {app} serves, but {exc}") from exc
            return TwinProcess(
                app=app, url=found.group(1), kubeconfig=kubeconfig, process=process, credentials=credentials
            )
    if process.poll() is None:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
    tail = (workdir / "twin.log").read_text(encoding="utf-8", errors="replace")[-800:]
    raise ClusterError(f"the twin of {app} did not start (exit {process.returncode}): {tail}")
