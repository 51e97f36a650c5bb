"""How one list of series follows from another: the lists of consecutive scrapes are mostly the same key
objects in the same order, with a few series come, gone or moved (a pod restarted, a span key appeared).

Stretches the lists share are found by comparing slices, which runs in C and costs little where they hold
the same objects; only where they part is a series looked up by key. Every function here is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def align(
    old: Sequence[Key], new: Sequence[Key], where: Callable[[Key], int | None] | None = None
) -> Alignment | None:
    """How ``new`` follows from ``old``, a list of distinct series; None when ``new`` lists a series twice.
    ``where`` answers the position of a series in ``old`` (None: not in it) when the caller keeps them, else
    an index of ``old`` is built the first time one is looked up."""
    stretches: list[tuple[int, int, int]] = []
    covered = bytearray(len(old))
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
        if where is None:
            where = dict(zip(old, range(len(old)), strict=True)).get
        found = where(key)
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


class Positions:
    """Where each series of a list of distinct series is, carried from one list to the next by the alignments
    between them. A series' key hashes every one of its labels, so only the series that come or go are
    hashed; the others keep a slot number, and the positions of the slots are a table of small integers
    built the first time a list is asked about."""

    def __init__(self, keys: Sequence[Key]) -> None:
        self._slot: dict[Key, int] = dict(zip(keys, range(len(keys)), strict=True))
        self._slots = list(range(len(keys)))  # the slot of each position of the list
        self._next = len(keys)
        self._at: dict[int, int] | None = None  # slot -> position

    def get(self, key: Key) -> int | None:
        """The position of ``key`` in the list, or None when it is not in it."""
        slot = self._slot.get(key)
        if slot is None:
            return None
        if self._at is None:
            self._at = dict(zip(self._slots, range(len(self._slots)), strict=True))
        return self._at[slot]

    def follow(self, old: Sequence[Key], new: Sequence[Key], found: Alignment) -> None:
        """Move on from the list ``old`` to ``new``, as ``found`` aligns them."""
        for at in found.uncovered:
            del self._slot[old[at]]
        slots: list[int] = []
        for start, origin, length in found.stretches:
            if origin >= 0:
                slots.extend(self._slots[origin : origin + length])
                continue
            for key in new[start : start + length]:
                self._slot[key] = self._next
                slots.append(self._next)
                self._next += 1
        self._slots = slots
        self._at = None
