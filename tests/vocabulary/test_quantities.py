"""Kubernetes quantities and Go durations, read as the API server and Go's ``time`` package read them."""

from __future__ import annotations

import pytest

from orchestrator.vocabulary.quantities import (
    QUANTITY_ERROR,
    go_duration,
    go_duration_seconds,
    parse_quantity,
    quantity,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 0.5), ("2", 2.0), ("1.5", 1.5), ("64Mi", 64 * 2**20), ("1G", 1e9), ("3Gi", 3 * 2**30),
        ("1e3", 1000.0), ("250u", 250e-6), ("2Ei", 2.0 * 2**60), (" 100m ", 0.1), (4, 4.0), (0.5, 0.5),
    ],
)  # fmt: skip
def test_quantities_parse_as_kubernetes_writes_them(text: object, value: float) -> None:
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5 cores", "1K", "Mi", "", "1.2.3", True, None, ["1"]])
def test_a_malformed_quantity_is_refused_in_the_api_servers_words(text: object) -> None:
    with pytest.raises(ValueError) as raised:
        parse_quantity(text)
    assert str(raised.value) == QUANTITY_ERROR


def test_a_lenient_read_gives_none_for_what_is_absent_or_unreadable() -> None:
    assert quantity("128Mi") == 128 * 2**20
    assert quantity(None) is None
    assert quantity("lots") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0),
        ("250us", 250e-6), ("10µs", 10e-6), ("1m0.5s", 60.5), ("-2s", -2.0), (".5s", 0.5),
    ],
)  # fmt: skip
def test_go_durations_read_as_time_parse_duration_reads_them(text: str, seconds: float) -> None:
    assert go_duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "5s3", "1d", "abc", "1 s", None, 30])
def test_a_malformed_or_absent_go_duration_is_none(text: object) -> None:
    assert go_duration_seconds(text) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (10, "10s"), (300, "5m0s"), (330, "5m30s"), (3725, "1h2m5s"), (-5, "-5s")],
)
def test_whole_seconds_print_as_go_prints_a_duration(seconds: int, text: str) -> None:
    assert go_duration(seconds) == text
    assert go_duration_seconds(text) == seconds
