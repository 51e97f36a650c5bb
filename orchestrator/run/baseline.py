"""The no-action baseline of a twin run: the same app, seed, schedule and versions with nothing acting,
cached under ``<runs>/.baselines/`` so it is computed once per configuration.

It is computed in a separate process started as the scored run begins, so it uses the second core while
the scored run drives its own twin. ``python -m orchestrator.run.baseline CONFIG_JSON DEST`` runs one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator.bundle.seal import is_sealed
from orchestrator.bundle.verify import verify_bundle
from orchestrator.errors import OrchestratorError
from orchestrator.run.config import RunConfig
from orchestrator.run.plan import RunPlan

BASELINES = ".baselines"
BUNDLE = "bundle"
WAIT_S = 600.0
CANCEL_WAIT_S = 30.0


def baseline_config(config: RunConfig, *, out: Path) -> RunConfig:
    """The no-action twin of ``config``: same world and schedule, no agent, no tools (no side effects)."""
    return config.model_copy(
        update={
            "agent": None,
            "agent_cmd": None,
            "role": "baseline",
            "tools": False,
            "sandboxed": True,  # no agent runs, so there is nothing to sandbox: one baseline for both
            "agent_paths": (),
            "baseline": False,
            "quiet": True,
            "clock": "stepped",
            "out": out,
            "run_id": None,
        }
    )


def baseline_key(config: RunConfig, plan: RunPlan) -> str:
    """What the baseline's data are a function of (no side effects)."""
    identity = {
        "app": config.app,
        "seed": config.seed,
        "schedule": plan.schedule.content_hash,
        "versions": plan.versions.__dict__,
        "sample_step_s": config.sample_step_s,
        "delta_s": config.delta_s,
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return f"{config.app}-s{config.seed}-{digest}"


def cached(directory: Path) -> Path | None:
    """The baseline bundle in ``directory`` when it is sealed and verifies."""
    bundle = directory / BUNDLE
    if is_sealed(bundle) and verify_bundle(bundle).ok:
        return bundle
    return None


@dataclass
class BaselineJob:
    """A baseline being computed by a child process; ``result()`` waits for it."""

    destination: Path
    scratch: Path
    process: subprocess.Popen[bytes] | None
    log: Path

    def result(self, *, timeout: float = WAIT_S) -> Path:
        if self.process is not None:
            try:
                code = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.cancel()
                raise OrchestratorError(f"the no-action baseline took longer than {timeout:.0f} s") from None
            if code != 0:
                raise OrchestratorError(f"the no-action baseline run failed (exit {code}); see {self.log}")
            _publish(self.scratch, self.destination)
        found = cached(self.destination)
        if found is None:
            raise OrchestratorError(f"{self.destination}: the baseline bundle is missing or does not verify")
        return found

    def cancel(self) -> None:
        """Stop a baseline still being computed, with everything it started, and drop its scratch."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)  # it reverts, seals and stops its servers
                self.process.wait(timeout=CANCEL_WAIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        if self.process is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _publish(scratch: Path, destination: Path) -> None:
    # Only the bundle is kept: the baseline's TSDB and workspace are of no use once it is sealed.
    for leftover in ("prometheus", "workspace"):
        shutil.rmtree(scratch / leftover, ignore_errors=True)
    # A rename is atomic: a concurrent run either sees no baseline or a whole one.
    try:
        os.rename(scratch, destination)
    except OSError:
        if cached(destination) is None:
            raise
        shutil.rmtree(scratch, ignore_errors=True)


def start_baseline(config: RunConfig, plan: RunPlan) -> BaselineJob:
    """The cached baseline, or a child process computing it."""
    root = config.runs_root / BASELINES
    destination = root / baseline_key(config, plan)
    scratch = root / f".{destination.name}.{os.getpid()}"
    log = root / f"{destination.name}.log"
    if cached(destination) is not None:
        return BaselineJob(destination, scratch, None, log)
    if destination.exists():
        shutil.rmtree(destination)  # an unsealed or damaged leftover of an interrupted baseline
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)
    document = baseline_config(config, out=scratch).model_dump_json()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.run.baseline", document],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            # Its own session: a Ctrl-C at the terminal must not cut the baseline short (a stopped
            # baseline is never published); the scored run cancels it when it has no use for it.
            start_new_session=True,
        )
    return BaselineJob(destination, scratch, process, log)


def main(argv: list[str]) -> int:
    from orchestrator.run.runner import run_marathon

    config = RunConfig.model_validate_json(argv[0])
    result = run_marathon(config)
    # Only a whole baseline may be published: a partial one would understate D_no_action for good.
    return 0 if result.reason == "completed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
