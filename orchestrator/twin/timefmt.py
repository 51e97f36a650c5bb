"""Simulated time as Kubernetes writes it: seconds since the twin epoch to RFC 3339 strings.

The epoch is the process's: a fixed instant (``FIXED_EPOCH``) for the twins a run or an admission drives in
its own process, whose bundles must not depend on when they ran; the wall-clock instant a served twin
started (``use_epoch``), so that a client of ``marathon twin serve`` sees timestamps of today and a Prometheus
it writes to holds series at the wall-clock time it is queried at, as with a real cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

FIXED_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
EPOCH = FIXED_EPOCH


def use_epoch(moment: datetime) -> None:
    """Make ``moment`` (to the whole second) simulated time 0 in this process; before any twin starts."""
    global EPOCH
    EPOCH = moment.astimezone(UTC).replace(microsecond=0)


def epoch_s() -> float:
    """Unix time of simulated time 0."""
    return EPOCH.timestamp()


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
