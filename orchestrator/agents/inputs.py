"""What every baseline agent reads: its environment, its options, the alert history file and its workspace
state.

The alert history is the runner's cumulative JSON list (or ``{"alerts": [...]}``) of alert states; each
entry carries the fields of the bundle's ``AlertRecord`` (``alert_id``, ``rule``, ``labels``, ``starts_at``,
``ends_at``). The latest entry per id wins, as in the bundle.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.agents.options import OPTIONS_ENV, OptionValue, read_options
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.score.attribution import POD_LABEL, SERVICE_LABELS, WORKLOAD_LABELS, normalise_name

log = logging.getLogger("orchestrator.agents")

# A Deployment's pod is <name>-<hash>-<suffix>; a StatefulSet's is <name>-<ordinal>.
_POD_OWNERS = (re.compile(r"^(?P<w>.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$"), re.compile(r"^(?P<w>.+)-\d+$"))
_NOISY_LOGGERS = ("httpx", "httpx2", "httpcore", "mcp", "mcp.client", "anyio")


class AlertView(BaseModel):
    """One alert as the agent sees it; tolerant of the id and rule spellings other tools use."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    alert_id: str = Field(min_length=1, validation_alias="alert_id")
    rule: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: float
    ends_at: float | None = None

    @property
    def firing(self) -> bool:
        return self.ends_at is None


def _normalise_entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    if "alert_id" not in entry and "id" in entry:
        entry["alert_id"] = entry["id"]
    labels = entry.get("labels") or {}
    if "rule" not in entry and isinstance(labels, dict) and "alertname" in labels:
        entry["rule"] = labels["alertname"]
    return entry


def parse_alerts(payload: Any, *, source: str = "alerts") -> list[AlertView]:
    """The latest state of every alert in a history payload, sorted by start then id (no side effects)."""
    entries = payload.get("alerts", []) if isinstance(payload, dict) else payload
    if not isinstance(entries, list):
        raise ConfigError(f"{source}: expected a list of alerts, found {type(entries).__name__}")
    latest: dict[str, AlertView] = {}
    for index, entry in enumerate(entries):
        try:
            alert = AlertView.model_validate(_normalise_entry(entry))
        except ValidationError as exc:
            raise ConfigError(f"{source}: alerts.{index} = {entry!r}: {exc.errors()[0]['msg']}") from exc
        latest[alert.alert_id] = alert
    return sorted(latest.values(), key=lambda alert: (alert.starts_at, alert.alert_id))


def load_alerts(path: str | Path | None) -> list[AlertView]:
    """The alert history file; a missing path or file means no alerts yet."""
    if not path or not Path(path).is_file():
        return []
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        return []
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from exc
    return parse_alerts(payload, source=str(path))


def _pod_workload(pod: str) -> str:
    for pattern in _POD_OWNERS:
        match = pattern.match(pod)
        if match:
            return match.group("w")
    return pod


def workload_of(labels: Mapping[str, str]) -> str | None:
    """The workload an alert's labels name: service, else workload, else the pod's owner (no side effects)."""
    for key in (*SERVICE_LABELS, *WORKLOAD_LABELS):
        if labels.get(key):
            return normalise_name(labels[key])
    pod = labels.get(POD_LABEL)
    return _pod_workload(normalise_name(pod)) if pod else None


@dataclass(frozen=True)
class AgentEnv:
    """The agent protocol's environment of one invocation."""

    invocation: int
    deadline: float | None
    alerts_path: str | None
    app: str
    namespace: str
    workspace: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, cwd: Path | None = None) -> AgentEnv:
        env = os.environ if environ is None else environ

        def number(name: str, default: str) -> float:
            value = env.get(name, default)
            try:
                return float(value)
            except ValueError as exc:
                raise ConfigError(f"environment {name} = {value!r}: not a number") from exc

        deadline = env.get("MARATHON_DEADLINE")
        return cls(
            invocation=int(number("MARATHON_INVOCATION", "0")),
            deadline=number("MARATHON_DEADLINE", "0") if deadline else None,
            alerts_path=env.get("MARATHON_ALERTS"),
            app=env.get("MARATHON_APP", ""),
            namespace=env.get("MARATHON_NAMESPACE", env.get("MARATHON_APP", "")),
            workspace=cwd if cwd is not None else Path.cwd(),
        )


def agent_options(agent: str, environ: Mapping[str, str] | None = None) -> dict[str, OptionValue]:
    """The options this invocation of ``agent`` was given (``MARATHON_AGENT_OPTIONS``, none when unset),
    checked against the ones it accepts; ``ConfigError`` naming the bad ones."""
    env = os.environ if environ is None else environ
    text = env.get(OPTIONS_ENV, "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"environment {OPTIONS_ENV} = {text!r}: not JSON: {exc}") from exc
    if not isinstance(options, dict):
        raise ConfigError(f"environment {OPTIONS_ENV} = {text!r}: not a JSON object")
    try:
        return read_options(agent, options)
    except ValueError as exc:
        raise ConfigError(f"environment {OPTIONS_ENV}: {exc}") from exc


def read_state(path: Path) -> dict[str, Any]:
    """The agent's JSON state from earlier invocations; empty on the first one."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: the agent state is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the agent state is not a JSON object")
    return data


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    """Write atomically, so a kill at the budget never leaves half a state file. Compact: an agent writes its
    state after every action, and only the unindented form is encoded in C."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)


def run_main(body: Callable[[], int]) -> int:
    """Run an agent's body: an expected failure is one line on stderr and exit code 1, not a traceback."""
    setup_logging()
    try:
        return body()
    except OrchestratorError as exc:
        log.error("%s", exc)
        return 1


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
