"""The whole rule pack, evaluated over seeded synthetic Online Boutique runs pushed to a real Prometheus:
a healthy hour raises nothing, and injected symptoms raise the alerts that name the right service."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import PrometheusServer
from tests.telemetry.synthetic import Fault, generate
from tests.telemetry.telemetry_support import push, running_prometheus

HEALTHY_ORIGIN = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FAULTY_ORIGIN = HEALTHY_ORIGIN + 86_400  # a day later, so the two runs never share a rule's window
FAULTS = (
    Fault("cartservice", start=900, end=1800, error_ratio=0.4),
    Fault("checkoutservice", start=2100, end=2700, restart_every=60),
)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    for server in running_prometheus(tmp_path_factory):
        push(server, generate(origin=HEALTHY_ORIGIN, minutes=60, seed=42))
        push(server, generate(origin=FAULTY_ORIGIN, minutes=60, seed=43, faults=FAULTS))
        yield server


def evaluate_hour(server: PrometheusServer, origin: float) -> AlertEvaluator:
    evaluator = AlertEvaluator(load_rule_pack(), PrometheusQuerier(server.url), start=origin)
    for k in range(1, 31):  # a boundary every 120 s, as the runner's default cadence
        evaluator.evaluate(until=origin + 120 * k)
    return evaluator


@pytest.mark.slow
def test_a_healthy_hour_raises_no_alert_and_no_pending_one(prometheus: PrometheusServer) -> None:
    evaluator = evaluate_hour(prometheus, HEALTHY_ORIGIN)
    assert evaluator.failures == []
    assert evaluator.history == []
    assert [(t.rule, t.kind, dict(t.alert.labels)) for t in evaluator.transitions] == []


@pytest.mark.slow
def test_injected_symptoms_raise_alerts_on_the_faulty_services_only(prometheus: PrometheusServer) -> None:
    evaluator = evaluate_hour(prometheus, FAULTY_ORIGIN)
    assert evaluator.failures == []
    fired = {(r.rule, r.labels.get("service")) for r in evaluator.history if r.state == "firing"}
    assert {
        ("ServiceHighErrorRatio", "cartservice"),
        ("ServiceErrorRatioCritical", "cartservice"),
        ("KubePodCrashLooping", "checkoutservice"),
        ("KubeContainerRestarted", "checkoutservice"),
        ("KubeDeploymentNoAvailableReplicas", "checkoutservice"),
    } <= fired
    assert {service for _, service in fired} == {"cartservice", "checkoutservice"}
    for record in evaluator.history:
        assert record.labels["namespace"] == "online-boutique"
        window = next(f for f in FAULTS if f.service == record.labels["service"])
        assert FAULTY_ORIGIN + window.start <= record.starts_at <= FAULTY_ORIGIN + window.end + 300
    resolved = {r.id for r in evaluator.history if r.state == "resolved"}
    assert resolved == {r.id for r in evaluator.history}  # everything recovered before the hour ended
