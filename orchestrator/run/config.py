"""What a marathon run is asked to do, validated before anything starts, and the identity of a run.

``RunConfig`` refuses bad input with a ``ConfigError`` naming the field and value, so a run never
half-starts. ``run_identity`` derives the run id from everything the run's data are a function of, so two
identical stepped runs share an id and write identical data files.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

import orchestrator
from orchestrator.catalog.topology import APPS
from orchestrator.errors import ConfigError, Problem
from orchestrator.schedule import ScheduleParams

_WHERE = "run configuration"
PACKAGE_ROOT = Path(orchestrator.__file__).resolve().parent
NOOP_AGENT = "noop"


class RunConfig(BaseModel):
    """One marathon: the app, the seed, the agent under test and how the world is driven.

    ``agent`` names a command of ``orchestrator.agents.AGENTS``; ``agent_cmd`` is any command line. A
    ``baseline`` run is the no-action reference of METRICS.md's degradation level: no agent process and no
    tools are started (doing nothing needs neither), and it is not scored itself.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: str
    seed: int = Field(ge=0)
    agent: str | None = None
    agent_cmd: str | None = None
    backend: Literal["twin", "kube"] = "twin"
    clock: Literal["stepped", "realtime"] = "stepped"
    faults: int = Field(default=60, ge=0)
    delta_s: int = Field(default=120, ge=1)
    budget_s: float = Field(default=110.0, gt=0)
    injection_period_s: int = Field(default=3600, ge=1)
    observation_period_s: int = Field(default=1800, ge=1)
    min_duration_s: int = Field(default=240, ge=1)
    max_duration_s: int = Field(default=720, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1)
    exclusive_culprits: bool = True
    out: Path | None = None
    runs_root: Path = Path("runs")
    kubeconfig: Path | None = None
    prometheus_url: str | None = None
    speed: float = Field(default=1.0, gt=0)
    quiet: bool = False
    role: Literal["scored", "baseline"] = "scored"
    tools: bool = True
    baseline: bool = True
    sample_step_s: int = Field(default=15, ge=5)
    model_url: str | None = None  # the upstream the metering proxy forwards the agent's model calls to
    token_budget: int | None = Field(default=None, ge=1)  # per invocation

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        problems = _problems(self)
        if problems:
            # Not a ValueError: pydantic lets it through, so every problem keeps its own field.
            raise ConfigError("invalid run configuration", problems)
        return self

    @property
    def agent_name(self) -> str:
        if self.role == "baseline":
            return NOOP_AGENT
        if self.agent is not None:
            return self.agent
        return Path(shlex.split(self.agent_cmd or "agent")[0]).name

    def schedule_params(self) -> ScheduleParams:
        return ScheduleParams(
            fault_count=self.faults,
            injection_period_s=self.injection_period_s,
            observation_period_s=self.observation_period_s,
            min_duration_s=self.min_duration_s,
            max_duration_s=self.max_duration_s,
            delta_s=self.delta_s,
            max_concurrent=self.max_concurrent,
            exclusive_culprits=self.exclusive_culprits,
        )


def _problems(config: RunConfig) -> list[Problem]:
    found: list[Problem] = []

    def bad(field: str, value: object, message: str) -> None:
        found.append(Problem(_WHERE, None, field, repr(value), message))

    if config.app not in APPS:
        bad("app", config.app, f"unknown app; expected one of {', '.join(APPS)}")
    if config.role == "scored" and (config.agent is None) == (config.agent_cmd is None):
        bad("agent", config.agent, "give exactly one of agent (a name) and agent_cmd (a command line)")
    if config.budget_s >= config.delta_s:
        bad("budget_s", config.budget_s, f"must be shorter than delta_s = {config.delta_s}")
    if config.backend == "kube":
        if config.kubeconfig is None or not config.kubeconfig.is_file():
            bad("kubeconfig", config.kubeconfig, "the kube backend needs an existing kubeconfig file")
        if not config.prometheus_url:
            bad(
                "prometheus_url", config.prometheus_url, "the kube backend needs the cluster's Prometheus URL"
            )
        if config.clock != "realtime":
            bad("clock", config.clock, "a real cluster runs on the realtime clock")
    elif config.kubeconfig is not None or config.prometheus_url is not None:
        bad("backend", config.backend, "kubeconfig and prometheus_url are for the kube backend only")
    for field in ("injection_period_s", "observation_period_s"):
        if getattr(config, field) % config.delta_s:
            bad(field, getattr(config, field), f"must be a multiple of delta_s = {config.delta_s}")
    if config.min_duration_s > config.max_duration_s:
        bad("min_duration_s", config.min_duration_s, f"exceeds max_duration_s = {config.max_duration_s}")
    return found


def make_config(**fields: Any) -> RunConfig:
    """A ``RunConfig``, or a ``ConfigError`` listing every field that is wrong (no side effects)."""
    try:
        return RunConfig(**fields)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "config"
            value = error.get("input") if error["loc"] else ""
            problems.append(
                Problem(_WHERE, None, field, repr(value), error["msg"].removeprefix("Value error, "))
            )
        raise ConfigError("invalid run configuration", problems) from None


def known_agents() -> Mapping[str, list[str]]:
    """The baseline agents' commands, or none while the agents package does not provide them."""
    try:
        module = importlib.import_module("orchestrator.agents")
    except ImportError:
        return {}
    agents: Mapping[str, list[str]] = getattr(module, "AGENTS", {})
    return agents


def agent_command(config: RunConfig) -> list[str]:
    """The command line of the agent under test; ``ConfigError`` when it names nothing runnable."""
    if config.role == "baseline":
        return []
    if config.agent is not None:
        agents = known_agents()
        if config.agent not in agents:
            known = ", ".join(sorted(agents)) or "none are installed"
            raise ConfigError(
                "unknown agent",
                [Problem(_WHERE, None, "agent", repr(config.agent), f"not a known agent ({known})")],
            )
        command = list(agents[config.agent])
    else:
        try:
            command = shlex.split(config.agent_cmd or "")
        except ValueError as exc:
            raise ConfigError(
                "unreadable agent command",
                [Problem(_WHERE, None, "agent_cmd", repr(config.agent_cmd), str(exc))],
            ) from None
    if not command:
        raise ConfigError(
            "empty agent command", [Problem(_WHERE, None, "agent_cmd", "''", "names no program")]
        )
    program = command[0]
    if shutil.which(program) is None and not (Path(program).is_file() and "/" in program):
        raise ConfigError(
            "agent program not found",
            [Problem(_WHERE, None, "agent_cmd", repr(program), "is not an executable on PATH nor a file")],
        )
    return command


@functools.lru_cache(maxsize=8)
def code_digest(root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 over every Python source of the package (relative path and bytes), in path order.

    Computed once per process: the code a process runs is the code it read when it started, even if the
    files change under it afterwards."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Versions:
    """The versions and hashes a run's data depend on."""

    catalog_version: str
    catalog_sha256: str
    rule_pack_version: str
    rule_pack_sha256: str
    code_version: str
    code_sha256: str
    admission: str


def run_identity(
    config: RunConfig, *, versions: Versions, command: list[str], schedule_hash: str, unique: str = ""
) -> str:
    """``<app>-s<seed>-<agent>-<hash>``: the same for the same inputs (no side effects).

    ``unique`` separates runs whose data cannot repeat (realtime clocks, real clusters).
    """
    identity = {
        "app": config.app,
        "seed": config.seed,
        "agent": config.agent_name,
        "command": command,
        "backend": config.backend,
        "clock": config.clock,
        "budget_s": config.budget_s,
        "speed": config.speed if config.clock == "realtime" else None,
        "sample_step_s": config.sample_step_s,
        "tools": config.tools,
        "schedule": schedule_hash,
        "versions": versions.__dict__,
        "unique": unique,
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    agent = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in config.agent_name)[:32]
    return f"{config.app}-s{config.seed}-{agent}-{digest}"
