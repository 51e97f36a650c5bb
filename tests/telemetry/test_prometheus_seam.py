"""The per-run Prometheus and the query adapter, against a real server fed by remote write."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.errors import TelemetryError
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.server import PrometheusServer, config_text, connect_prometheus, start_prometheus
from tests.telemetry.telemetry_support import labels, need_binary, push, running_prometheus, steps

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a simulated run in the past


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    yield from running_prometheus(tmp_path_factory)


def test_the_server_listens_on_loopback_and_is_ready(prometheus: PrometheusServer) -> None:
    assert prometheus.url.startswith("http://127.0.0.1:")
    assert prometheus.ready()
    assert prometheus.pid is not None


def test_samples_pushed_at_past_timestamps_are_queryable(prometheus: PrometheusServer) -> None:
    series = labels("seam_requests_total", namespace="online-boutique", service_name="frontend")
    push(prometheus, {series: steps(T0, T0 + 300, 5, lambda t: 2 * (t - T0))})
    querier = PrometheusQuerier(prometheus.url)
    (sample,) = querier.instant("rate(seam_requests_total[1m])", at=T0 + 300)
    assert sample.value == pytest.approx(2.0)
    assert sample.labels == {"namespace": "online-boutique", "service_name": "frontend"}
    assert querier.instant("seam_requests_total", at=T0 - 3600) == []
    (one,) = querier.range("seam_requests_total", start=T0 + 10, end=T0 + 40, step=15)
    assert one.points == ((T0 + 10, 20.0), (T0 + 25, 50.0), (T0 + 40, 80.0))
    assert "online-boutique" in querier.label_values("namespace")
    assert querier.label_values("service_name", match=["seam_requests_total"]) == ["frontend"]


def test_an_older_run_can_still_be_written_after_a_newer_one(prometheus: PrometheusServer) -> None:
    push(prometheus, {labels("seam_late"): steps(T0 + 7200, T0 + 7260, 15, 1)})
    push(prometheus, {labels("seam_early"): steps(T0 - 86400, T0 - 86340, 15, 3)})
    (sample,) = PrometheusQuerier(prometheus.url).instant("seam_early", at=T0 - 86340)
    assert sample.value == 3


def test_long_ranges_are_split_without_losing_or_repeating_points(prometheus: PrometheusServer) -> None:
    push(prometheus, {labels("seam_dense"): steps(T0, T0 + 30_000, 1, lambda t: t - T0)})
    (series,) = PrometheusQuerier(prometheus.url).range("seam_dense", start=T0, end=T0 + 25_000, step=1)
    times = [t for t, _ in series.points]
    assert len(times) == 25_001 and times == sorted(set(times))
    assert series.points[-1] == (T0 + 25_000, 25_000.0)


def test_scalars_and_special_values_are_numbers(prometheus: PrometheusServer) -> None:
    querier = PrometheusQuerier(prometheus.url)
    assert [s.value for s in querier.instant("vector(1) / 4", at=T0)] == [0.25]
    assert querier.instant("scalar(vector(3))", at=T0)[0].value == 3
    assert math.isnan(querier.instant("vector(0) / 0", at=T0)[0].value)


def test_a_bad_query_is_a_telemetry_error_that_names_it(prometheus: PrometheusServer) -> None:
    with pytest.raises(TelemetryError, match=r"rate\(x\[1m\]"):
        PrometheusQuerier(prometheus.url).instant("rate(x[1m]", at=T0)


def test_an_unreachable_server_is_a_telemetry_error() -> None:
    with pytest.raises(TelemetryError, match="unreachable"):
        PrometheusQuerier("http://127.0.0.1:9", timeout=2).instant("up", at=T0)
    with pytest.raises(TelemetryError, match="not ready"):
        connect_prometheus("http://127.0.0.1:9", ready_timeout=0.5)


def test_a_missing_binary_names_the_debian_package(tmp_path: Path) -> None:
    with pytest.raises(TelemetryError, match="Debian package 'prometheus'"):
        start_prometheus(tmp_path, binary="prometheus-not-installed-here")


def test_stopping_ends_the_process_and_connecting_reuses_a_running_server(tmp_path: Path) -> None:
    need_binary("prometheus")
    server = start_prometheus(tmp_path)
    process = server.process
    assert process is not None
    other = connect_prometheus(server.url)
    assert other.process is None and other.ready()
    server.stop()
    assert process.poll() is not None
    assert not other.ready()
    other.stop()  # not ours: a no-op


def test_a_run_directory_with_a_tsdb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "prometheus" / "data" / "wal").mkdir(parents=True)
    with pytest.raises(TelemetryError, match="already holds a TSDB"):
        start_prometheus(tmp_path)


def test_the_config_scrapes_nothing_and_accepts_old_samples() -> None:
    text = config_text(rule_files=[Path("/r/a.yaml")], evaluation_interval="1s")
    assert "scrape_configs: []" in text and "out_of_order_time_window: 30d" in text and "/r/a.yaml" in text
