"""A probe's ``or vector(0)`` fallback stands in for missing data only when its left side has no labels.

``X or vector(0)`` keeps every series of X and adds the label-less 0 unless X already holds a label-less
series. When X keeps labels (a bare selector, ``min_over_time(...)``, an aggregation ``by`` a label), the
0 is always there beside X's series, and a probe sample is healthy only when every series meets its
condition (docs/metrics.md, "Inputs"): such a probe could read unhealthy for the whole life of its fault.
"""

from __future__ import annotations

import re

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.loading import load_catalog

FALLBACK = re.compile(r"\bor\s+vector\s*\(")
LABEL_FREE = re.compile(r"^(sum|min|max|avg|count|group|stddev|stdvar|scalar)\s*\(", re.I)


def _left_operand(query: str, at: int) -> str:
    """The operand to the left of the ``or`` at ``at``: back to the enclosing open parenthesis."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if query[i] == ")":
            depth += 1
        elif query[i] == "(":
            if depth == 0:
                return query[i + 1 : at].strip()
            depth -= 1
    return query[:at].strip()


def _closes_at_end(text: str, start: int) -> bool:
    """Whether the parenthesis opened at ``start`` closes at the end of ``text``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def label_free(operand: str) -> bool:
    """Whether ``operand`` is one aggregation over everything (no ``by``/``without``); anything else, even
    a ratio of two such, counts as labelled (the catalog writes its fallbacks inside the ratio)."""
    operand = operand.strip()
    while operand.startswith("(") and _closes_at_end(operand, 0):
        operand = operand[1:-1].strip()
    found = LABEL_FREE.match(operand)
    if found is None or re.search(r"\b(by|without)\s*\(", operand):
        return False
    return _closes_at_end(operand, found.end() - 1)


def fallbacks_on_labelled_series(query: str) -> list[str]:
    return [
        operand
        for match in FALLBACK.finditer(query)
        if not label_free(operand := _left_operand(query, match.start()))
    ]


def test_the_check_tells_a_label_free_left_side_from_a_labelled_one() -> None:
    assert fallbacks_on_labelled_series('sum(rate(x{a="b"}[2m])) or vector(0)') == []
    assert fallbacks_on_labelled_series('(sum(rate(x[2m])) or vector(0)) / clamp_min(y, 1)') == []
    assert fallbacks_on_labelled_series('min(min_over_time(x{a="b"}[2m])) or vector(0)') == []
    assert fallbacks_on_labelled_series('min_over_time(x{a="b"}[2m]) or vector(0)')
    assert fallbacks_on_labelled_series("sum by (pod) (rate(x[2m])) or vector(0)")


@pytest.mark.parametrize("app", app_names())
def test_every_probe_fallback_stands_beside_a_label_free_left_side(app: str) -> None:
    bad = {
        entry.id: found
        for entry in load_catalog(app).entries
        if (found := fallbacks_on_labelled_series(entry.probe.query))
    }
    assert bad == {}
