"""Symptom probes and entry-point service measurements, judged and measured from a real Prometheus."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from orchestrator.telemetry.probes import HealthyWhen, ProbeQuery, evaluate_probe, judge, measure_service
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.server import PrometheusServer
from tests.telemetry.telemetry_support import labels, push, running_prometheus, steps

T0 = 1_767_225_600.0
SERVER = {
    "namespace": "online-boutique",
    "service_name": "frontend",
    "span_name": "GET /",
    "span_kind": "SPAN_KIND_SERVER",
}
BUCKETS = ("1000", "2500", "5000", "+Inf")


def probe(op: str, value: float, no_data: str = "healthy", query: str = "x") -> ProbeQuery:
    return ProbeQuery.model_validate(
        {"query": query, "healthy": {"op": op, "value": value}, "no_data": no_data}
    )


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    # frontend: 10 req/s, 2 of them failing; 8 finish within 1 s, 1 within 2.5 s, 1 takes longer.
    cumulative = {"1000": 8, "2500": 9, "5000": 10, "+Inf": 10}
    series = {
        labels("traces_span_metrics_calls_total", **SERVER, status_code="STATUS_CODE_UNSET"): steps(
            T0, T0 + 600, 5, lambda t: 8 * (t - T0)
        ),
        labels("traces_span_metrics_calls_total", **SERVER, status_code="STATUS_CODE_ERROR"): steps(
            T0, T0 + 600, 5, lambda t: 2 * (t - T0)
        ),
        labels(
            "traces_span_metrics_duration_milliseconds_count", **SERVER, status_code="STATUS_CODE_UNSET"
        ): steps(T0, T0 + 600, 5, lambda t: 10 * (t - T0)),
        labels("probe_queue_depth", queue="orders"): steps(T0, T0 + 600, 5, 40),
        labels("probe_queue_depth", queue="emails"): steps(T0, T0 + 600, 5, 3),
    }
    for bound in BUCKETS:
        key = labels(
            "traces_span_metrics_duration_milliseconds_bucket",
            **SERVER,
            status_code="STATUS_CODE_UNSET",
            le=bound,
        )
        series[key] = steps(T0, T0 + 600, 5, lambda t, n=cumulative[bound]: n * (t - T0))
    for server in running_prometheus(tmp_path_factory):
        push(server, series)
        yield server


def test_a_probe_is_healthy_when_every_value_meets_its_condition() -> None:
    assert judge(probe("<", 5), [1.0, 4.9], at=10).healthy
    result = judge(probe("<", 5), [1.0, 7.0, 9.0], at=10)
    assert (result.healthy, result.value, result.at) == (False, 7.0, 10)
    assert judge(probe("==", 1), [1.0], at=0).healthy and not judge(probe("==", 1), [0.0], at=0).healthy
    assert judge(probe(">=", 0.9), [0.9], at=0).healthy and not judge(probe(">", 0.9), [0.9], at=0).healthy


def test_no_data_counts_as_healthy_unless_the_probe_says_otherwise() -> None:
    assert judge(probe("<", 1), [], at=0).healthy
    assert judge(probe("<", 1), [math.nan], at=0).value is None
    assert not judge(probe("<", 1, no_data="unhealthy"), [], at=0).healthy


def test_probe_definitions_are_validated() -> None:
    with pytest.raises(ValidationError):
        ProbeQuery.model_validate({"query": "x", "healthy": {"op": "!=", "value": 1}})
    with pytest.raises(ValidationError):
        HealthyWhen.model_validate({"op": "<", "value": 1, "extra": 2})


def test_a_probe_is_evaluated_at_the_given_time(prometheus: PrometheusServer) -> None:
    querier = PrometheusQuerier(prometheus.url)
    depth = probe("<", 10, query="probe_queue_depth")
    result = evaluate_probe(querier, depth, at=T0 + 300)
    assert (result.value, result.healthy) == (40.0, False)
    assert evaluate_probe(querier, depth, at=T0 - 600).healthy  # before the run: no data
    ratio = probe(
        "<",
        0.05,
        query='sum(rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[1m]))'
        " / sum(rate(traces_span_metrics_calls_total[1m]))",
    )
    result = evaluate_probe(querier, ratio, at=T0 + 300)
    assert result.value == pytest.approx(0.2) and not result.healthy


def test_service_measurements_are_rate_error_fraction_and_slow_fraction(prometheus: PrometheusServer) -> None:
    querier = PrometheusQuerier(prometheus.url)
    sample = measure_service(querier, namespace="online-boutique", service="frontend", at=T0 + 300)
    assert sample.q == pytest.approx(10.0)
    assert sample.e == pytest.approx(0.2)
    assert sample.l == pytest.approx(0.1)
    assert (sample.namespace, sample.service, sample.at) == ("online-boutique", "frontend", T0 + 300)


def test_a_service_without_traffic_measures_zero(prometheus: PrometheusServer) -> None:
    querier = PrometheusQuerier(prometheus.url)
    sample = measure_service(querier, namespace="online-boutique", service="adservice", at=T0 + 300)
    assert (sample.q, sample.e, sample.l) == (0.0, 0.0, 0.0)
