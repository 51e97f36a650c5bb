"""Rule health in the bundle: failed rule evaluations and the end-of-run summary are their own stream, read
back by the reader, checked against each other by ``bundle verify`` and named by its command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.records import Record, RuleFailed, RuleHealth, RunEnded
from orchestrator.bundle.verify import verify_bundle
from tests.bundle.commandline import run_command

BROKEN = "parse error: unclosed left parenthesis"


def _failed(rule: str, t: float) -> RuleFailed:
    return RuleFailed(rule=rule, group="errors", t=t, error=BROKEN)


def _health(rule: str, *, evaluations: int, failures: int) -> RuleHealth:
    return RuleHealth(rule=rule, group="errors", evaluations=evaluations, failures=failures)


def _bundle(tmp_path: Path, rules: list[Record]) -> Path:
    return write_bundle(tmp_path / "bundle", [sample_manifest(), *rules, RunEnded(t=360.0)])


def _problems(bundle: Path) -> list[str]:
    return [str(finding) for finding in verify_bundle(bundle).findings]


def test_failed_evaluations_and_the_summary_are_read_back_and_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[Record] = [
        _failed("Broken", 120.0),
        _failed("Broken", 240.0),
        _health("Broken", evaluations=3, failures=2),
        _health("Healthy", evaluations=3, failures=0),
    ]
    bundle = _bundle(tmp_path, records)
    lines = (bundle / "data" / "rules.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["rule_failed"] * 2 + ["rule_health"] * 2
    loaded = read_bundle(bundle)
    assert [(f.rule, f.t, f.error) for f in loaded.rule_failures] == [
        ("Broken", 120.0, BROKEN), ("Broken", 240.0, BROKEN),
    ]  # fmt: skip
    assert [(h.rule, h.evaluations, h.failures) for h in loaded.rule_health] == [
        ("Broken", 3, 2), ("Healthy", 3, 0),
    ]  # fmt: skip
    verification = verify_bundle(bundle)
    assert verification.ok, verification.findings
    assert [h.rule for h in verification.unhealthy_rules] == ["Broken"]
    assert run_command("orchestrator.bundle.commands", ["bundle", "verify", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "rule Broken (errors): 2 of 3 evaluations failed" in out
    assert "Healthy" not in out


def test_a_bundle_without_rule_records_verifies_and_reads_as_none(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, [])
    assert not (bundle / "data" / "rules.jsonl").exists()
    assert verify_bundle(bundle).ok
    loaded = read_bundle(bundle)
    assert loaded.rule_failures == () and loaded.rule_health == ()


def test_a_summary_that_disagrees_with_the_failed_evaluations_is_named(tmp_path: Path) -> None:
    records: list[Record] = [
        _failed("Broken", 120.0),
        _failed("Missing", 120.0),
        _health("Broken", evaluations=3, failures=2),
        _health("Healthy", evaluations=3, failures=0),
        _health("Healthy", evaluations=3, failures=0),
        _failed("Healthy", 360.0),
    ]
    problems = _problems(_bundle(tmp_path, records))
    assert problems == [
        "data/rules.jsonl: line 5: rule 'Healthy' summarised twice",
        "data/rules.jsonl: line 6: a failed evaluation after the summary",
        "data/rules.jsonl: rule 'Missing' failed but is missing from the summary",
        "data/rules.jsonl: rule 'Broken': the summary counts 2 failed evaluations, the stream holds 1",
        "data/rules.jsonl: rule 'Healthy': the summary counts 0 failed evaluations, the stream holds 1",
    ]


def test_a_rule_cannot_fail_more_often_than_it_was_evaluated() -> None:
    with pytest.raises(ValidationError, match="3 failures of 2 evaluations"):
        _health("Broken", evaluations=2, failures=3)
