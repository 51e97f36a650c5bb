"""The mean of scores over seeds and its Student t confidence interval, in plain Python (no side effects)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL = 0.95
_BISECTIONS = 200


@dataclass(frozen=True)
class MeanInterval:
    """A sample's mean and, from two values on, the two-sided Student t interval around it."""

    n: int
    mean: float
    half_width: float | None  # None with one value: one sample says nothing about its spread

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width


def central_probability(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom (no side effects).

    The closed form for whole degrees of freedom (Abramowitz and Stegun 26.7.3 and 26.7.4): a finite
    series in cos(theta), theta = atan(t / sqrt(df)), exact up to rounding."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if t <= 0:
        return 0.0
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:  # sin(theta) * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))
        term, total = 1.0, 1.0
        for j in range(1, df // 2):
            term *= cos2 * (2 * j - 1) / (2 * j)
            total += term
        return min(1.0, sin * total)
    # 2/pi * (theta + sin(theta) * (cos + 2/3 cos^3 + 2*4/(3*5) cos^5 + ... up to cos^(df-2)))
    cos = math.cos(theta)
    term, total = cos, 0.0
    for j in range(1, (df - 1) // 2 + 1):
        if j > 1:
            term *= cos2 * (2 * j - 2) / (2 * j - 1)
        total += term
    series = sin * total if df > 1 else 0.0
    return min(1.0, 2.0 / math.pi * (theta + series))


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| <= t) = ``level`` (the two-sided critical value), by bisection (no side effects)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level}")
    low, high = 0.0, 1.0
    while central_probability(high, df) < level:
        low, high = high, high * 2.0
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if central_probability(middle, df) < level:
            low = middle
        else:
            high = middle
    return high


def mean_interval(values: Sequence[float], *, level: float = LEVEL) -> MeanInterval:
    """The mean of ``values`` and the half-width of its Student t interval at ``level`` over n - 1 degrees
    of freedom (sample standard deviation); no interval from a single value (no side effects)."""
    n = len(values)
    if n == 0:
        raise ValueError("the mean of no values")
    mean = math.fsum(values) / n
    if n == 1:
        return MeanInterval(n=1, mean=mean, half_width=None)
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return MeanInterval(n=n, mean=mean, half_width=t_quantile(level, n - 1) * math.sqrt(variance / n))
