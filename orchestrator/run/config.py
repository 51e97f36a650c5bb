"""What a marathon run is asked to do, validated before anything starts, and the identity of a run.

``RunConfig`` refuses bad input with a ``ConfigError`` naming the field and value, so a run never
half-starts; ``load_agent_config`` reads a file of agent options the same way. ``run_identity`` derives the
run id from everything the run's data are a function of, so two identical stepped runs share an id and
write identical data files.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    model_validator,
)

import orchestrator
from orchestrator.agents.options import OptionValue, option_problems, plain_value
from orchestrator.catalog.apps import app_names, listed
from orchestrator.errors import ConfigError, Problem
from orchestrator.schedule import ScheduleParams, default_load

_WHERE = "run configuration"
PACKAGE_ROOT = Path(orchestrator.__file__).resolve().parent
NOOP_AGENT = "noop"
_OPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _option_name(name: str) -> str:
    if not _OPTION_NAME.fullmatch(name):
        raise ValueError("an option name is a letter or _, then letters, digits, _, . or -")
    return name


OptionName = Annotated[str, AfterValidator(_option_name)]
AgentOption = Annotated[OptionValue, PlainValidator(plain_value)]


class RunConfig(BaseModel):
    """One marathon: the app, the seed, the agent under test and how the world is driven.

    ``agent`` names a command of ``orchestrator.agents.AGENTS``; ``agent_cmd`` is any command line.
    ``agent_options`` are given to every invocation; a built-in agent accepts only the options it declares
    (``orchestrator.agents.options``), any other command whatever it is given. A ``baseline`` run is the
    no-action reference of docs/metrics.md's degradation level: no agent process and no tools are started
    (doing nothing needs neither), and it is not scored itself.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: str
    seed: int = Field(ge=0)
    agent: str | None = None
    agent_cmd: str | None = None
    agent_options: dict[OptionName, AgentOption] = Field(default_factory=dict)
    backend: Literal["twin", "kube"] = "twin"
    clock: Literal["stepped", "realtime"] = "stepped"
    faults: int = Field(default=ScheduleParams.fault_count, ge=0)  # set from the app (``_derived_defaults``)
    delta_s: int = Field(default=120, ge=1)
    budget_s: float = Field(default=110.0, gt=0)
    injection_period_s: int = Field(default=3600, ge=1)
    observation_period_s: int = Field(default=1800, ge=1)
    min_duration_s: int = Field(default=240, ge=1)
    max_duration_s: int = Field(default=720, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1)
    exclusive_culprits: bool = True
    decoys: int = Field(default=12, ge=0)  # harmless changes on services no active fault touches
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
    sandboxed: bool = True  # False only when asked for (--unsandboxed); recorded in the bundle and score
    agent_paths: tuple[Path, ...] = ()  # more read-only paths the agent sees in its sandbox
    # The run's id when its caller chose it (the control plane names the run before its worker starts, so
    # the registry, the run's home and the bundle share one id); else ``run_identity`` derives it.
    run_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

    @model_validator(mode="before")
    @classmethod
    def _derived_defaults(cls, data: Any) -> Any:
        """The defaults that follow from other fields, chosen here once for the CLI and the control plane:
        a real cluster's clock is realtime and the twin's stepped; the budget is Δ less 10 s, in 1-110 s;
        the arrivals and the cap are the app's ``default_load`` (its published_schedule) unless given, where
        ``max_concurrent`` given as None means no cap."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        app = data.get("app")
        if isinstance(app, str):
            count, cap = default_load(app)
            if data.get("faults") is None:
                data["faults"] = count
            data.setdefault("max_concurrent", cap)
        if data.get("clock") is None:
            data["clock"] = "realtime" if data.get("backend") == "kube" else "stepped"
        delta = data.get("delta_s", 120)
        if data.get("budget_s") is None and isinstance(delta, int | float) and not isinstance(delta, bool):
            data["budget_s"] = min(110.0, max(1.0, float(delta) - 10.0))
        return data

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

    @property
    def reproducible(self) -> bool:
        """On the stepped twin the same configuration gives the same bundle data, so the run id holds no
        wall time; anywhere else the world moves while the agent runs."""
        return self.backend == "twin" and self.clock == "stepped"

    @property
    def against_baseline(self) -> bool:
        """A scored run on the twin is compared with the no-action run of the same schedule; a real
        cluster cannot replay one."""
        return self.role == "scored" and self.baseline and self.backend == "twin"

    @property
    def options_for_agent(self) -> dict[str, OptionValue]:
        """The options the agent under test is given: none in a baseline run, which starts no agent."""
        return {} if self.role == "baseline" else dict(self.agent_options)

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
            decoy_count=self.decoys,
        )


def _problems(config: RunConfig) -> list[Problem]:
    found: list[Problem] = []

    def bad(field: str, value: object, message: str) -> None:
        found.append(Problem(_WHERE, None, field, repr(value), message))

    apps = app_names()
    if config.app not in apps:
        bad("app", config.app, f"unknown app; expected one of {listed(apps)}")
    if config.role == "scored" and (config.agent is None) == (config.agent_cmd is None):
        bad("agent", config.agent, "give exactly one of agent (a name) and agent_cmd (a command line)")
    if config.role == "scored" and config.agent is not None:
        for name, why in option_problems(config.agent, config.agent_options).items():
            bad(f"agent_options.{name}", config.agent_options[name], why)
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
    for path in config.agent_paths:
        if not path.is_absolute() or not path.exists():
            bad("agent_paths", str(path), "must be an existing absolute path")
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


@dataclass(frozen=True)
class AgentConfig:
    """A file of agent options: the options as read, and the line each one is on (JSON files have none)."""

    path: Path
    options: dict[str, object]
    lines: dict[str, int]


def load_agent_config(path: Path) -> AgentConfig:
    """Read a YAML or JSON mapping of option names to values; ``ConfigError`` naming the file, the line and
    what is wrong when it cannot be read or is not such a mapping. The values are checked by ``RunConfig``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the agent configuration: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cannot read the agent configuration: not UTF-8 text") from None
    lines: dict[str, int] = {}
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = Problem(str(path), exc.lineno, "document", "", f"not valid JSON: {exc.msg}")
            raise ConfigError("unreadable agent configuration", [problem]) from None
    else:
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            why = f"not valid YAML: {getattr(exc, 'problem', exc)}"
            problem = Problem(str(path), line, "document", "", why)
            raise ConfigError("unreadable agent configuration", [problem]) from None
        if isinstance(node, yaml.MappingNode):
            keys = [key for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            lines = {key.value: key.start_mark.line + 1 for key in keys}
    if not isinstance(data, dict):
        kind = "nothing" if data is None else f"a {type(data).__name__}"
        message = f"holds {kind}; expected a mapping of option names to values"
        raise ConfigError("invalid agent configuration", [Problem(str(path), None, "document", "", message)])
    problems = [
        Problem(str(path), lines.get(str(name)), repr(name), "", "an option name must be a string")
        for name in data
        if not isinstance(name, str)
    ]
    if problems:
        raise ConfigError("invalid agent configuration", problems)
    return AgentConfig(path=path, options=dict(data), lines=lines)


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
    if config.options_for_agent:  # absent when there are none, so such runs keep the ids they always had
        identity["agent_options"] = config.options_for_agent
    if not config.sandboxed:  # likewise: only an unsandboxed run has an id of its own
        identity["sandboxed"] = False
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    agent = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in config.agent_name)[:32]
    return f"{config.app}-s{config.seed}-{agent}-{digest}"
