"""A rule Prometheus cannot evaluate, in a short run on the stepped twin with its real Prometheus: each
boundary journals the failed window naming the rule, the run's end journals every rule's health, ``bundle
verify`` finds them consistent and the report shows the rule; two runs journal the same bytes."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from pathlib import Path

import pytest

from orchestrator.bundle.reader import read_bundle
from orchestrator.bundle.verify import verify_bundle
from orchestrator.run.config import make_config
from orchestrator.run.events import Ignore
from orchestrator.run.finishing import BUNDLE_DIR, seal
from orchestrator.run.plan import make_plan
from orchestrator.run.setup import open_session
from orchestrator.score.report import rule_health_html
from orchestrator.telemetry.rules import RulePack, load_rule_pack
from tests.telemetry.telemetry_support import write_pack

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed"),
]
BROKEN = """
groups:
  - name: broken
    interval: 30s
    rules:
      - alert: CartErrorsUnparsable
        expr: sum by (service (rate(traces_span_metrics_calls_total[2m]))
        labels: {severity: critical}
"""
BOUNDARIES = 4  # of 60 s each


def _run(tmp_path: Path, name: str) -> Path:
    config = make_config(
        app="online-boutique", seed=3, agent="noop", faults=1, delta_s=60, budget_s=10.0,
        injection_period_s=120, observation_period_s=120, min_duration_s=60, max_duration_s=120,
        baseline=False, quiet=True, out=tmp_path / name, runs_root=tmp_path / "runs",
    )  # fmt: skip
    plan = make_plan(config)
    broken = load_rule_pack(write_pack(tmp_path / "broken", BROKEN))
    rules = RulePack(
        version=plan.rules.version, sha256=plan.rules.sha256, rules=plan.rules.rules + broken.rules,
        files=plan.rules.files,
    )  # fmt: skip
    run_dir = tmp_path / name
    with open_session(
        config, dataclasses.replace(plan, rules=rules), run_id="rule-health", run_dir=run_dir, command=[],
        events=Ignore(), stop=threading.Event(),
    ) as session:  # fmt: skip
        session.finish(session.run())
    return seal(run_dir)


def test_a_rule_whose_query_fails_is_named_in_each_failed_window_and_in_the_run_end_summary(
    tmp_path: Path,
) -> None:
    bundle_dir = _run(tmp_path, "first")
    bundle = read_bundle(bundle_dir)
    assert {f.rule for f in bundle.rule_failures} == {"CartErrorsUnparsable"}
    # One failed window per boundary, and one more at the run's end: the last observation retries it, where
    # the rules that were evaluated have nothing new to evaluate.
    ends = [60.0 * k for k in range(1, BOUNDARIES + 1)]
    assert [f.t for f in bundle.rule_failures] == [*ends, ends[-1]]
    assert all("parse error" in f.error and f.group == "broken" for f in bundle.rule_failures)
    health = {h.rule: (h.evaluations, h.failures) for h in bundle.rule_health}
    assert health.pop("CartErrorsUnparsable") == (BOUNDARIES + 1, BOUNDARIES + 1)
    assert health and set(health.values()) == {(BOUNDARIES, 0)}  # the pack's own rules all evaluated fine
    verification = verify_bundle(bundle_dir)
    assert verification.ok, verification.findings
    assert [h.rule for h in verification.unhealthy_rules] == ["CartErrorsUnparsable"]
    assert "<td>CartErrorsUnparsable</td><td>broken</td><td>5 of 5</td>" in rule_health_html(bundle)

    again = _run(tmp_path, "second")
    for name in ("rules.jsonl", "alerts.jsonl"):
        assert (again / "data" / name).read_bytes() == (bundle_dir / "data" / name).read_bytes()
    assert (tmp_path / "second" / BUNDLE_DIR) == again
