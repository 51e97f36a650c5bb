"""How one list of series follows from another: the lists of consecutive scrapes are mostly the same key
objects in the same order, with a few series come, gone or moved (a pod restarted, a span key appeared).

Stretches the lists share are found by comparing slices, which runs in C and costs little where they hold
the same objects; only where they part is a series looked up by key. Every function here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.twin.observe.metrics import Key


def common_run(a: Sequence[Key], i: int, b: Sequence[Key], j: int) -> int:
    """How many series ``a[i:]`` and ``b[j:]`` start with in common: windows of doubling length are compared
    as slices, then the first difference is bisected."""
    limit = min(len(a) - i, len(b) - j)
    lo, step = 0, 1  # a[i : i + lo] == b[j : j + lo]
    while lo < limit:
        hi = min(lo + step, limit)
        if a[i + lo : i + hi] != b[j + lo : j + hi]:
            while hi - lo > 1:  # the first difference lies in [lo, hi)
                mid = (lo + hi) // 2
                if a[i + lo : i + mid] == b[j + lo : j + mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        lo, step = hi, step * 2
    return lo


@dataclass(frozen=True)
class Alignment:
    """``new`` in stretches ``(start in new, start in old or -1 for series not in old, length)``, in order,
    and the positions of ``old`` no stretch covers (its series that are not in ``new``)."""

    stretches: list[tuple[int, int, int]]
    uncovered: list[int]


def align(old: Sequence[Key], new: Sequence[Key]) -> Alignment | None:
    """How ``new`` follows from ``old``, a list of distinct series; None when ``new`` lists a series twice."""
    stretches: list[tuple[int, int, int]] = []
    covered = bytearray(len(old))
    index: dict[Key, int] | None = None
    fresh: set[Key] = set()
    i = j = 0
    while j < len(new):
        shared = common_run(old, i, new, j)
        if shared:
            if covered.find(1, i, i + shared) != -1:
                return None  # a series of old matched twice: new repeats it
            covered[i : i + shared] = bytes((1,)) * shared
            stretches.append((j, i, shared))
            i, j = i + shared, j + shared
            continue
        key = new[j]
        if index is None:
            index = dict(zip(old, range(len(old)), strict=True))
        found = index.get(key)
        if found is not None:
            i = found  # the next turn matches at least this series
            continue
        if key in fresh:
            return None
        fresh.add(key)
        last = stretches[-1] if stretches else None
        if last is not None and last[1] == -1 and last[0] + last[2] == j:
            stretches[-1] = (last[0], -1, last[2] + 1)
        else:
            stretches.append((j, -1, 1))
        j += 1
    uncovered: list[int] = []
    at = covered.find(0)
    while at != -1:
        uncovered.append(at)
        at = covered.find(0, at + 1)
    return Alignment(stretches, uncovered)
