"""The rule pack itself: promtool accepts it, and its tests make every rule both fire and stay quiet."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrator.agents.runbook_rules import RULE_TABLE
from orchestrator.catalog.apps import app_names
from orchestrator.catalog.topologies import load_topology
from orchestrator.telemetry.rules import default_rule_pack_dir, load_rule_pack
from orchestrator.vocabulary.series import series_names

PACK = default_rule_pack_dir()
TESTS = sorted((PACK / "tests").glob("*.yaml"))


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed (Debian package 'prometheus')")
        pytest.skip("promtool is not installed (Debian package 'prometheus')")
    return path


def promtool_cases() -> tuple[set[str], set[str]]:
    fires: set[str] = set()
    quiet: set[str] = set()
    for path in TESTS:
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for case in group.get("alert_rule_test", []):
                (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    return fires, quiet


def test_every_rule_has_a_firing_and_a_quiet_promtool_case() -> None:
    names = set(load_rule_pack(PACK).names())
    fires, quiet = promtool_cases()
    assert sorted(names - fires) == []
    assert sorted(names - quiet) == []
    assert sorted((fires | quiet) - names) == []


@pytest.mark.slow
def test_promtool_accepts_the_rules_and_their_tests_pass() -> None:
    tool = promtool()
    files = [str(p) for p in sorted(PACK.glob("*.yaml"))]
    checked = subprocess.run([tool, "check", "rules", *files], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [tool, "test", "rules", *map(str, TESTS)], capture_output=True, text=True, timeout=300
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.count("SUCCESS") == len(TESTS)


def test_every_rule_has_severity_summary_description_and_a_for() -> None:
    for rule in load_rule_pack(PACK).rules:
        labels, annotations = dict(rule.labels), dict(rule.annotations)
        assert labels.get("severity") in {"warning", "critical"}, rule.name
        assert {"summary", "description"} <= set(annotations), rule.name
        assert rule.for_seconds >= 60, rule.name
        assert rule.interval == 15, rule.name


def test_every_rule_carries_a_signal_the_runbook_knows() -> None:
    for rule in load_rule_pack(PACK).rules:
        assert dict(rule.labels).get("signal") in RULE_TABLE, rule.name


def test_app_rules_name_a_registered_app_and_are_scoped_to_its_namespace() -> None:
    app_rules = [r for r in load_rule_pack(PACK).rules if r.app is not None]
    assert {rule.app for rule in app_rules} == set(app_names())
    for rule in app_rules:
        assert rule.app is not None
        namespace = load_topology(rule.app).namespace
        selectors = re.findall(r"\{[^}]*\}", rule.expr)
        assert selectors and all(f'namespace="{namespace}"' in s for s in selectors), rule.name


def test_each_app_has_its_own_rule_file_with_only_its_rules() -> None:
    for rule in load_rule_pack(PACK).rules:
        if rule.app is not None:
            assert rule.source == f"{rule.app}.yaml", rule.name
        else:
            assert Path(rule.source).stem not in app_names(), rule.name


def test_rule_pack_has_a_version_and_a_content_hash() -> None:
    pack = load_rule_pack(PACK)
    assert pack.version == (PACK / "VERSION").read_text(encoding="utf-8").strip() != ""
    assert re.fullmatch(r"[0-9a-f]{64}", pack.sha256)
    assert 25 <= len(pack.rules) <= 60  # 30 since the retirements of alert_rules/README.md
    assert pack.files == tuple(p.name for p in sorted(PACK.glob("*.yaml")))


def test_rules_only_read_series_of_the_contract() -> None:
    known = series_names()
    functions = {
        "sum",
        "rate",
        "increase",
        "max",
        "max_over_time",
        "label_replace",
        "histogram_quantile",
        "count",
        "changes",
        "delta",
        "by",
        "on",
        "and",
        "unless",
        "offset",
        "group_left",
        "le",
    }
    for rule in load_rule_pack(PACK).rules:
        metrics = set(re.findall(r"\b([a-z][a-z0-9_]*)\s*(?:\{|\[)", rule.expr)) - functions
        assert metrics <= known, (rule.name, metrics - known)
