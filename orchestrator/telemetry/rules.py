"""The alert rule pack: Prometheus rule files read into typed rules, with the pack's version and content hash.

Only alerting rules are accepted: the evaluator asks Prometheus for each rule's expression, so a recording
rule would have nowhere to write its series.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ConfigError, Problem
from orchestrator.telemetry.templates import template_problems

DEFAULT_EVALUATION_INTERVAL = 60.0  # Prometheus' global default when a group names no interval
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_UNITS = (365 * 86400.0, 7 * 86400.0, 86400.0, 3600.0, 60.0, 1.0, 0.001)


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as ``90s``, ``1h30m`` or ``0`` (no side effects)."""
    if text == "0":
        return 0.0
    match = _DURATION.match(text)
    if not text or match is None:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(part) * unit for part, unit in zip(match.groups(), _UNITS, strict=True) if part)


class RuleModel(BaseModel):
    """One rule as written in a rule file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    alert: str | None = None
    record: str | None = None
    expr: str
    for_: str = Field("0s", alias="for")
    keep_firing_for: str = "0s"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class RuleGroupModel(BaseModel):
    """One rule group as written in a rule file."""

    model_config = ConfigDict(extra="forbid")

    name: str
    interval: str | None = None
    limit: int | None = None
    rules: list[RuleModel]


class RuleFileModel(BaseModel):
    """A whole Prometheus rule file."""

    model_config = ConfigDict(extra="forbid")

    groups: list[RuleGroupModel]


@dataclass(frozen=True)
class AlertRule:
    """An alerting rule ready to evaluate: durations in seconds, where it came from."""

    name: str
    group: str
    expr: str
    interval: float
    for_seconds: float
    keep_firing_for: float
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    source: str


@dataclass(frozen=True)
class RulePack:
    """Every alerting rule of the pack, its declared version and the hash of its files."""

    version: str
    sha256: str
    rules: tuple[AlertRule, ...]
    files: tuple[str, ...]

    def names(self) -> list[str]:
        return sorted({rule.name for rule in self.rules})


def default_rule_pack_dir() -> Path:
    """``alert_rules/`` at the top of the source tree."""
    return Path(__file__).resolve().parents[2] / "alert_rules"


def load_rule_pack(directory: Path | None = None) -> RulePack:
    """Read ``VERSION`` and every ``*.yaml`` rule file of ``directory``; report every problem at once."""
    root = directory or default_rule_pack_dir()
    version_file = root / "VERSION"
    problems: list[Problem] = []
    if not version_file.is_file():
        raise ConfigError(f"rule pack {root} has no VERSION file")
    version = version_file.read_text(encoding="utf-8").strip()
    if not version:
        problems.append(Problem(str(version_file), 1, "version", "", "is empty"))
    paths = sorted(root.glob("*.yaml"))
    if not paths:
        problems.append(Problem(str(root), None, "", "", "holds no *.yaml rule file"))
    digest = hashlib.sha256()
    digest.update(b"VERSION\0" + version_file.read_bytes() + b"\0")
    rules: list[AlertRule] = []
    for path in paths:
        raw = path.read_bytes()
        digest.update(path.name.encode() + b"\0" + raw + b"\0")
        rules.extend(_read_rule_file(path, raw, problems))
    if problems:
        raise ConfigError(f"rule pack {root} is invalid", problems)
    return RulePack(
        version=version,
        sha256=digest.hexdigest(),
        rules=tuple(rules),
        files=tuple(path.name for path in paths),
    )


def _read_rule_file(path: Path, raw: bytes, problems: list[Problem]) -> list[AlertRule]:
    where = str(path)
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problems.append(Problem(where, line, "", "", f"is not valid YAML: {exc}"))
        return []
    try:
        parsed = RuleFileModel.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            problems.append(Problem(where, None, field, repr(error.get("input"))[:80], error["msg"]))
        return []
    rules: list[AlertRule] = []
    for g, group in enumerate(parsed.groups):
        interval = _duration(group.interval, where, f"groups.{g}.interval", problems)
        for r, rule in enumerate(group.rules):
            field = f"groups.{g}.rules.{r}"
            if rule.alert is None:
                problems.append(
                    Problem(
                        where, None, f"{field}.record", str(rule.record), "only alerting rules are supported"
                    )
                )
                continue
            for key, text in [*rule.labels.items(), *rule.annotations.items()]:
                for message in template_problems(text):
                    problems.append(Problem(where, None, f"{field} ({rule.alert}).{key}", text[:80], message))
            rules.append(
                AlertRule(
                    name=rule.alert,
                    group=group.name,
                    expr=rule.expr,
                    interval=interval or DEFAULT_EVALUATION_INTERVAL,
                    for_seconds=_duration(rule.for_, where, f"{field}.for", problems) or 0.0,
                    keep_firing_for=_duration(
                        rule.keep_firing_for, where, f"{field}.keep_firing_for", problems
                    )
                    or 0.0,
                    labels=tuple(sorted(rule.labels.items())),
                    annotations=tuple(sorted(rule.annotations.items())),
                    source=path.name,
                )
            )
    return rules


def _duration(text: str | None, where: str, field: str, problems: list[Problem]) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        problems.append(Problem(where, None, field, text, str(exc)))
        return None
