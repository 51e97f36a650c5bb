"""The alert rule pack: Prometheus rule files read into typed rules, with the pack's version and content hash.

Only alerting rules are accepted: the evaluator asks Prometheus for each rule's expression, so a recording
rule would have nowhere to write its series.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ConfigError, Problem
from orchestrator.telemetry.templates import template_problems

_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DEFAULT_EVALUATION_INTERVAL = 60.0  # Prometheus' global default when a group names no interval
APP_LABEL = "app"  # marks a rule written for one app (alert_rules/README.md)
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
    """One rule group as written in a rule file; its rules are validated one by one."""

    model_config = ConfigDict(extra="forbid")

    name: str
    interval: str | None = None
    limit: int | None = None
    rules: list[dict[str, Any]]


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

    @property
    def app(self) -> str | None:
        """The app the rule was written for (its ``app`` label), or None for a rule of every app."""
        return dict(self.labels).get(APP_LABEL)


@dataclass(frozen=True)
class RulePack:
    """Every alerting rule of the pack, its declared version and the hash of its files."""

    version: str
    sha256: str
    rules: tuple[AlertRule, ...]
    files: tuple[str, ...]

    def names(self) -> list[str]:
        return sorted({rule.name for rule in self.rules})

    def for_app(self, app: str) -> RulePack:
        """The pack without the rules labelled for another app: they select other namespaces and can never
        fire in ``app``'s run, so evaluating them would only cost queries (no side effects)."""
        rules = tuple(rule for rule in self.rules if rule.app in (None, app))
        return RulePack(version=self.version, sha256=self.sha256, rules=rules, files=self.files)


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
        rules.extend(_read_rule_file(path, raw, problems=problems))
    if problems:
        raise ConfigError(f"rule pack {root} is invalid", problems)
    return RulePack(
        version=version,
        sha256=digest.hexdigest(),
        rules=tuple(rules),
        files=tuple(path.name for path in paths),
    )


def _read_rule_file(path: Path, raw: bytes, *, problems: list[Problem]) -> list[AlertRule]:
    where = str(path)
    try:
        data, lines = _parsed(raw)
    except yaml.YAMLError:
        try:  # read again by the pure-Python parser, whose message names the problem
            data = yaml.safe_load(raw)
            lines = _line_index(yaml.compose(raw))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problems.append(Problem(where, line, "", "", f"is not valid YAML: {exc}"))
            return []

    def report(loc: tuple[str | int, ...], value: object, message: str) -> None:
        field = ".".join(map(str, loc))
        line = next((lines[loc[:cut]] for cut in range(len(loc), -1, -1) if loc[:cut] in lines), None)
        problems.append(Problem(where, line, field, "" if value is None else str(value)[:80], message))

    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        report(("groups",), None, "a rule file is a mapping with a list of groups")
        return []
    rules: list[AlertRule] = []
    for g, raw_group in enumerate(data["groups"]):
        group = _validated(RuleGroupModel, raw_group, loc=("groups", g), report=report)
        if group is None:
            continue
        interval = _duration(group.interval, ("groups", g, "interval"), report=report)
        if group.limit:
            report(("groups", g, "limit"), group.limit, "alert limits are not supported by the evaluator")
        for r, raw_rule in enumerate(group.rules):
            loc = ("groups", g, "rules", r)
            rule = _validated(RuleModel, raw_rule, loc=loc, report=report)
            if rule is None:
                continue
            if rule.alert is None:
                report((*loc, "record"), rule.record, "only alerting rules are supported")
                continue
            for kind, templates in (("labels", rule.labels), ("annotations", rule.annotations)):
                for key, text in templates.items():
                    for message in template_problems(text):
                        report((*loc, kind, key), text, f"{rule.alert}: {message}")
            rules.append(
                AlertRule(
                    name=rule.alert,
                    group=group.name,
                    expr=rule.expr,
                    interval=interval or DEFAULT_EVALUATION_INTERVAL,
                    for_seconds=_duration(rule.for_, (*loc, "for"), report=report) or 0.0,
                    keep_firing_for=_duration(rule.keep_firing_for, (*loc, "keep_firing_for"), report=report)
                    or 0.0,
                    labels=tuple(sorted(rule.labels.items())),
                    annotations=tuple(sorted(rule.annotations.items())),
                    source=path.name,
                )
            )
    return rules


Loc = tuple[str | int, ...]
Reporter = Callable[[Loc, object, str], None]
M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], raw: object, *, loc: Loc, report: Reporter) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            report((*loc, *error["loc"]), error.get("input"), error["msg"])
        return None


def _parsed(raw: bytes) -> tuple[Any, dict[Loc, int]]:
    """The one document of ``raw`` and the line of each of its values, composed once, by libyaml when
    present (the same data as ``yaml.safe_load``; the lines are indexed before construction)."""
    loader = _FAST_LOADER(raw)
    try:
        node = loader.get_single_node()
        lines = _line_index(node)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, lines


def _line_index(
    node: yaml.Node | None, *, loc: Loc = (), lines: dict[Loc, int] | None = None
) -> dict[Loc, int]:
    """The 1-based line where the value at each path starts, so problems can name it."""
    index: dict[Loc, int] = {} if lines is None else lines
    if node is None:
        return index
    index[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _line_index(value, loc=(*loc, str(key.value)), lines=index)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _line_index(item, loc=(*loc, position), lines=index)
    return index


def _duration(text: str | None, loc: Loc, *, report: Reporter) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        report(loc, text, str(exc))
        return None
