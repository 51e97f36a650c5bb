"""Loading a rule pack: durations, version and hash, and bad files reported with file, field and value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.catalog.apps import REPOSITORY_ROOT
from orchestrator.errors import ConfigError
from orchestrator.telemetry import rules as rules_module
from orchestrator.telemetry.rules import DEFAULT_EVALUATION_INTERVAL, load_rule_pack, parse_duration
from tests.telemetry.telemetry_support import write_pack

GOOD = """
groups:
  - name: a
    interval: 30s
    rules:
      - alert: One
        expr: up == 0
        for: 1h30m
        keep_firing_for: 90s
        labels: {severity: critical}
        annotations: {summary: "{{ $labels.job }} down"}
  - name: b
    rules:
      - alert: Two
        expr: vector(1)
"""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("15s", 15), ("1h30m", 5400), ("2d", 172800), ("500ms", 0.5), ("1w", 604800)],
)
def test_prometheus_durations_are_read_in_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15", "1.5m", "m", "30m1h"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_a_pack_is_read_with_its_intervals_durations_and_defaults(tmp_path: Path) -> None:
    pack = load_rule_pack(write_pack(tmp_path, GOOD, version="2.3.4"))
    one, two = pack.rules
    assert (one.name, one.group, one.interval, one.for_seconds, one.keep_firing_for) == (
        "One",
        "a",
        30,
        5400,
        90,
    )
    assert dict(one.labels) == {"severity": "critical"} and one.source == "rules.yaml"
    assert (two.interval, two.for_seconds, two.labels, two.annotations) == (
        DEFAULT_EVALUATION_INTERVAL,
        0,
        (),
        (),
    )
    assert pack.version == "2.3.4" and pack.names() == ["One", "Two"]


def test_the_hash_changes_with_any_rule_file_or_the_version(tmp_path: Path) -> None:
    first = load_rule_pack(write_pack(tmp_path / "x", GOOD)).sha256
    assert load_rule_pack(write_pack(tmp_path / "y", GOOD)).sha256 == first
    assert load_rule_pack(write_pack(tmp_path / "z", GOOD.replace("up == 0", "up < 1"))).sha256 != first
    assert load_rule_pack(write_pack(tmp_path / "v", GOOD, version="other")).sha256 != first


def test_every_problem_is_reported_with_file_field_and_value(tmp_path: Path) -> None:
    bad = """
groups:
  - name: a
    interval: 15 seconds
    limit: 10
    rules:
      - alert: One
        expr: up
        for: soon
        annotations: {summary: "{{ $labels.job | title }}"}
      - record: job:up
        expr: sum(up)
      - alert: Two
        expr: up
        severity: high
"""
    with pytest.raises(ConfigError) as caught:
        load_rule_pack(write_pack(tmp_path, bad))
    text = str(caught.value)
    assert "rules.yaml" in text
    assert "groups.0.interval = 15 seconds" in text
    assert "groups.0.limit = 10: alert limits are not supported" in text
    assert "groups.0.rules.0.for = soon" in text
    assert (
        "groups.0.rules.0.annotations.summary" in text
        and "One: unsupported template function 'title'" in text
    )
    assert "rules.yaml:4: groups.0.interval" in text
    assert "groups.0.rules.1.record = job:up: only alerting rules are supported" in text
    assert "severity" in text and "Extra inputs are not permitted" in text
    assert len(caught.value.problems) >= 4


def test_a_file_that_is_not_yaml_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_rule_pack(write_pack(tmp_path, "groups:\n  - name: [a\n"))
    (problem,) = caught.value.problems
    assert (
        problem.file.endswith("rules.yaml")
        and problem.line is not None
        and "not valid YAML" in problem.message
    )


def test_a_pack_without_a_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(GOOD, encoding="utf-8")
    with pytest.raises(ConfigError, match="no VERSION file"):
        load_rule_pack(tmp_path)


def test_the_pack_is_parsed_once_into_the_data_and_lines_of_two_readings() -> None:
    """One composition (by libyaml when present) gives what ``yaml.safe_load`` plus a composed line index
    gave, for every committed rule file."""
    files = sorted((REPOSITORY_ROOT / "alert_rules").glob("*.yaml"))
    assert files
    for path in files:
        raw = path.read_bytes()
        data, lines = rules_module._parsed(raw)
        assert data == yaml.safe_load(raw)
        assert repr(data) == repr(yaml.safe_load(raw))  # the same types and key order too
        assert lines == rules_module._line_index(yaml.compose(raw))
