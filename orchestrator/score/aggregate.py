"""One app and agent over several seeds: the mean of every figure with its 95 % confidence interval
(Student t, n - 1 degrees of freedom), and how consistently each fault kind was resolved (pure).

A fault kind is a catalog id. It counts as resolved in a seed when every injection of it in that seed was
handled end to end (a = b = c = 1); its consistency is the share of the seeds that injected it in which it
was resolved. The leaderboard counts it the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orchestrator.score.charts import Interval
from orchestrator.score.scorecard import Scorecard

CONFIDENCE = 0.95


def _t_cdf_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with ``df`` (a positive integer) degrees of freedom, in closed form
    (Abramowitz and Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    cos, sin = math.cos(theta), math.sin(theta)
    if df % 2 == 1:
        total, term = 0.0, cos
        for k in range(1, (df - 1) // 2 + 1):
            if k > 1:
                term *= cos * cos * (2 * k - 2) / (2 * k - 1)
            total += term
        return 2.0 / math.pi * (theta + sin * total)
    total, term = 1.0, 1.0
    for k in range(1, df // 2):
        term *= cos * cos * (2 * k - 1) / (2 * k)
        total += term
    return sin * total


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| < t) = ``confidence``: the half-width factor of a two-sided interval."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    low, high = 0.0, 1.0
    while _t_cdf_two_sided(high, df) < confidence:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if _t_cdf_two_sided(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float | None
    sd: float | None  # sample standard deviation (n - 1)
    low: float | None  # the confidence interval; None with fewer than two values
    high: float | None


def estimate(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """Mean, sample standard deviation and the Student t confidence interval of the mean."""
    n = len(values)
    if n == 0:
        return Estimate(0, None, None, None, None)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(1, mean, None, None, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return Estimate(n, mean, sd, mean - half, mean + half)


# The figures averaged over seeds: label, how to read it off a scorecard, and its scale (for the charts).
FIGURES: tuple[tuple[str, Callable[[Scorecard], float | None], float], ...] = (
    ("Marathon-Score", lambda c: c.marathon_score, 100.0),
    ("Corr", lambda c: c.corr, 1.0),
    ("Loc", lambda c: c.loc, 1.0),
    ("Loc-strict", lambda c: c.loc_strict, 1.0),
    ("Rep", lambda c: c.rep, 1.0),
    ("Risk", lambda c: c.risk, 1.0),
    ("Degradation level %", lambda c: c.degradation_level, 100.0),
    ("MTTD s", lambda c: c.mttd_s.median, 0.0),
    ("MTTL s", lambda c: c.mttl_s.median, 0.0),
    ("MTTR s", lambda c: c.mttr_s.median, 0.0),
    ("Cost $", lambda c: c.cost_usd, 0.0),
)


@dataclass(frozen=True)
class FigureSummary:
    label: str
    values: tuple[float, ...]  # the seeds that have the figure (risk, degradation and MTTx may be missing)
    estimate: Estimate
    scale: float  # 0: no fixed scale


def summarise(cards: Sequence[Scorecard]) -> list[FigureSummary]:
    summaries: list[FigureSummary] = []
    for label, read, scale in FIGURES:
        values = tuple(v for v in (read(card) for card in cards) if v is not None)
        summaries.append(FigureSummary(label, values, estimate(values), scale))
    return summaries


def as_interval(summary: FigureSummary) -> Interval:
    e = summary.estimate
    return Interval(summary.label, summary.values, e.mean, e.low, e.high)


@dataclass(frozen=True)
class KindConsistency:
    catalog_id: str
    category: str
    mechanism: str
    seeds: int  # seeds in which it was injected
    resolved: int  # of those, seeds in which every injection of it was handled end to end
    injections: int

    @property
    def share(self) -> float:
        return self.resolved / self.seeds if self.seeds else 0.0


@dataclass(frozen=True)
class KindOutcome:
    """One fault of a run as consistency counts it: its kind, and whether it was handled end to end."""

    catalog_id: str
    category: str
    mechanism: str
    handled: bool


def handled_end_to_end(a: int, b: int, c: int) -> bool:
    """Correlated, located and repaired: docs/metrics.md's "Resolved" but for collateral, which the bundle
    cannot show yet."""
    return a == 1 and b == 1 and c == 1


def consistency(cards: Sequence[Scorecard]) -> list[KindConsistency]:
    """Per fault kind, in how many of the seeds that injected it it was resolved (catalog id order)."""
    return consistency_of(
        [
            [KindOutcome(o.catalog_id, o.category, o.mechanism, handled_end_to_end(o.a, o.b, o.c))
             for o in card.outcomes]  # fmt: skip
            for card in cards
        ]
    )


def consistency_of(runs: Sequence[Sequence[KindOutcome]]) -> list[KindConsistency]:
    """``runs``: one per seed. A kind counts as resolved in a seed when every fault of it there was handled
    end to end; its consistency is the share of the seeds that injected it in which it was (pure)."""
    kinds: dict[str, tuple[str, str]] = {}
    seeds: dict[str, int] = {}
    resolved: dict[str, int] = {}
    injections: dict[str, int] = {}
    for outcomes in runs:
        handled: dict[str, bool] = {}
        for o in outcomes:
            kinds.setdefault(o.catalog_id, (o.category, o.mechanism))
            handled[o.catalog_id] = handled.get(o.catalog_id, True) and o.handled
            injections[o.catalog_id] = injections.get(o.catalog_id, 0) + 1
        for catalog_id, done in handled.items():
            seeds[catalog_id] = seeds.get(catalog_id, 0) + 1
            resolved[catalog_id] = resolved.get(catalog_id, 0) + int(done)
    return [
        KindConsistency(
            catalog_id=catalog_id,
            category=kinds[catalog_id][0],
            mechanism=kinds[catalog_id][1],
            seeds=seeds[catalog_id],
            resolved=resolved[catalog_id],
            injections=injections[catalog_id],
        )
        for catalog_id in sorted(kinds)
    ]
