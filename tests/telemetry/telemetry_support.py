"""Shared helpers of the telemetry tests: a real per-module Prometheus, and pushing series by remote write."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from prometheus_remote_writer import RemoteWriter

from orchestrator.telemetry.server import PrometheusServer, start_prometheus

Points = Sequence[tuple[float, float]]


def need_binary(name: str) -> None:
    """Skip when ``name`` is missing on a developer machine; in CI a missing binary is a failure."""
    if shutil.which(name) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (Debian package 'prometheus')")
        pytest.skip(f"{name} is not installed (Debian package 'prometheus')")


def running_prometheus(
    tmp_path_factory: pytest.TempPathFactory, **options: object
) -> Iterator[PrometheusServer]:
    need_binary("prometheus")
    server = start_prometheus(tmp_path_factory.mktemp("run"), **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def push(server: PrometheusServer, series: Mapping[tuple[tuple[str, str], ...], Points]) -> None:
    """Write each series' (seconds, value) points through Prometheus' remote-write receiver."""
    writer = RemoteWriter(url=server.remote_write_url, strict_timestamps=True)
    try:
        writer.send(
            [
                {
                    "metric": dict(labels),
                    "values": [value for _, value in points],
                    "timestamps": [round(t * 1000) for t, _ in points],
                }
                for labels, points in series.items()
            ]
        )
    finally:
        writer.close()


def labels(metric: str, **extra: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"__name__": metric, **extra}.items()))


def steps(start: float, end: float, every: float, value: object) -> list[tuple[float, float]]:
    """Points from ``start`` to ``end`` (inclusive) every ``every`` seconds; ``value`` is a number or a
    function of the time."""
    out: list[tuple[float, float]] = []
    k = 0
    while start + k * every <= end + 1e-9:
        t = start + k * every
        out.append((t, float(value(t)) if callable(value) else float(value)))  # type: ignore[arg-type]
        k += 1
    return out


def write_pack(directory: Path, rules_yaml: str, version: str = "test-1") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "VERSION").write_text(version + "\n", encoding="utf-8")
    (directory / "rules.yaml").write_text(rules_yaml, encoding="utf-8")
    return directory


__all__ = ["Path", "labels", "need_binary", "push", "running_prometheus", "steps", "write_pack"]
