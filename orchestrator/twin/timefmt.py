"""Simulated time as Kubernetes writes it: seconds since the twin epoch to RFC 3339 strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def rfc3339(now: float) -> str:
    """``2026-01-01T00:00:05Z``: the second-resolution form of metadata and status timestamps."""
    return (EPOCH + timedelta(seconds=int(now))).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(now: float) -> str:
    """Microsecond form, as events' ``eventTime`` and managedFields use."""
    return (EPOCH + timedelta(seconds=now)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_nano(now: float) -> str:
    """Nanosecond form, as the kubelet prefixes log lines with ``timestamps=true``."""
    whole = int(now // 1)
    nanos = round((now - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    stamp = (EPOCH + timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


def parse_rfc3339(text: str) -> float:
    """Seconds since the twin epoch for an RFC 3339 timestamp (``sinceTime``, ``restartedAt``)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - EPOCH).total_seconds()
