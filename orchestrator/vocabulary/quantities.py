"""Kubernetes quantities (``250m``, ``64Mi``, ``1e3``) and Go durations (``500ms``, ``1h30m``), read and
written the way the API server and Go's ``time`` package do.
"""

from __future__ import annotations

import re

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_SUFFIX = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip
# The API server's own words for a quantity it cannot decode.
QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

_DURATION = re.compile(r"^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
}  # fmt: skip


def parse_quantity(value: object) -> float:
    """A Kubernetes quantity as a plain number (cores, bytes, a count); ``ValueError`` with the API server's
    message when it is not one. Numbers pass through as they are."""
    if isinstance(value, bool):
        raise ValueError(QUANTITY_ERROR)
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(QUANTITY_ERROR)
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(QUANTITY_ERROR)
    number, suffix = match.group(1), match.group(2) or ""
    if suffix in _SUFFIX:
        return float(number) * _SUFFIX[suffix]
    return float(number + suffix)  # a decimal exponent: 1e3


def quantity(value: object) -> float | None:
    """A Kubernetes quantity as a plain number; None when it is absent or unreadable."""
    try:
        return None if value is None else parse_quantity(value)
    except ValueError:
        return None


def go_duration_seconds(text: object) -> float | None:
    """Seconds in a Go duration (``30s``, ``1h30m``, ``500ms``, ``1.5h``) as ``time.ParseDuration`` reads it;
    None when absent or malformed."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _DURATION.match(text):
        return None
    total = sum(float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART.findall(text))
    return -total if text.startswith("-") else total


def go_duration(seconds: int) -> str:
    """A whole number of seconds as Go's ``Duration.String`` writes it: ``45s``, ``5m0s``, ``1h2m0s``."""
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, rest = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{rest}s"
    return f"{sign}{minutes}m{rest}s" if minutes else f"{sign}{rest}s"
