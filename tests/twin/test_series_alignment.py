"""A scrape's change of series is worked out by aligning it with the scrape before; the staleness markers,
the digest and the encoder's view are those of comparing the two lists as sets."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from itertools import starmap

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.twin.observe.alignment import Positions, align, common_run
from orchestrator.twin.observe.metrics import Key
from orchestrator.twin.observe.telemetry import DIGEST_BLOCK, STALE_NAN, Telemetry, _series, timestamp_ms


def _key(i: int) -> Key:
    return ("m", (("i", str(i)),))


def test_common_runs_stop_at_the_first_difference() -> None:
    a = [_key(i) for i in range(100)]
    b = [*a[:37], _key(1000), *a[37:]]
    assert common_run(a, 0, b, 0) == 37
    assert common_run(a, 37, b, 38) == 63
    assert common_run(a, 0, a, 0) == 100
    assert common_run(a, 5, b, 99) == 0


def test_an_alignment_names_the_stretches_kept_the_series_come_and_the_positions_gone() -> None:
    old = [_key(i) for i in range(10)]
    new = [*old[:3], _key(50), _key(51), *old[5:8], old[9]]
    found = align(old, new)
    assert found is not None
    assert found.stretches == [(0, 0, 3), (3, -1, 2), (5, 5, 3), (8, 9, 1)]
    assert found.uncovered == [3, 4, 8]


def test_a_list_that_repeats_a_series_is_not_aligned() -> None:
    old = [_key(i) for i in range(5)]
    assert align(old, [*old, old[2]]) is None
    assert align(old, [_key(9), *old, _key(9)]) is None


def _naive(lists: list[list[Key]]) -> tuple[str, list[list[Key]]]:
    """The digest and the recorded lists as the set comparison of consecutive scrapes makes them."""
    digest = hashlib.sha256()
    last: list[Key] = []
    recorded: list[list[Key]] = []
    for k, keys in enumerate(lists):
        values = [float(i) for i in range(len(keys))]
        keys = list(keys)
        if keys != last:
            gone = sorted(set(last) - set(keys))
            last = list(keys)
            keys += gone
            values += [STALE_NAN] * len(gone)
            digest.update("\n".join(starmap(_series, keys)).encode())
        digest.update(struct.pack(f"<q{len(values)}d", timestamp_ms(15.0 * k), *values))
        recorded.append(keys)
    return digest.hexdigest(), recorded


def _edited(keys: list[Key], changes: list[tuple[str, int]], fresh: Iterator[int]) -> list[Key]:
    """A copy of ``keys`` after ``changes``: a new key added, or one dropped, moved or repeated, each at a
    place drawn from its number."""
    keys = list(keys)
    for edit, at in changes:
        if edit == "add":
            keys.insert(at % (len(keys) + 1), _key(next(fresh)))
        elif keys and edit == "drop":
            del keys[at % len(keys)]
        elif keys and edit == "move":
            keys.insert(at // 7 % len(keys), keys.pop(at % len(keys)))
        elif keys:
            keys.insert(at // 3 % len(keys), keys[at % len(keys)])
    return keys


@settings(max_examples=300, deadline=None)
@given(
    edits=st.lists(
        st.lists(
            st.tuples(st.sampled_from(["add", "drop", "move", "repeat"]), st.integers(0, 999)), max_size=4
        ),
        min_size=1,
        max_size=10,
    )
)
def test_any_change_of_series_is_recorded_as_the_set_comparison_records_it(
    edits: list[list[tuple[str, int]]],
) -> None:
    keys = [_key(i) for i in range(8)]
    fresh = iter(range(100, 10_000))
    lists: list[list[Key]] = []
    for changes in edits:
        keys = _edited(keys, changes, fresh)
        lists.append(keys)
    telemetry = Telemetry(remote_write_url=None)
    recorded: list[list[Key]] = []
    for k, listed in enumerate(lists):
        scraped = list(listed)
        telemetry.record(15.0 * k, scraped, [float(i) for i in range(len(scraped))])
        recorded.append(list(scraped))
    digest, expected = _naive(lists)
    assert recorded == expected
    assert telemetry.digest == digest


@settings(max_examples=300, deadline=None)
@given(
    edits=st.lists(
        st.lists(st.tuples(st.sampled_from(["add", "drop", "move"]), st.integers(0, 999)), max_size=5),
        min_size=1,
        max_size=12,
    )
)
def test_positions_carried_through_alignments_are_those_of_each_list(
    edits: list[list[tuple[str, int]]],
) -> None:
    keys = [_key(i) for i in range(8)]
    fresh = iter(range(100, 10_000))
    positions = Positions(keys)
    for changes in edits:
        new = _edited(keys, changes, fresh)
        # Equal keys that are other objects, as a scrape makes them for an object it works out anew.
        new = [
            (name, tuple(list(labels))) if i % 3 else (name, labels) for i, (name, labels) in enumerate(new)
        ]
        found = align(keys, new, positions.get)
        assert found is not None
        assert found == align(keys, new)
        positions.follow(keys, new, found)
        keys = new
        assert all(positions.get(key) == at for at, key in enumerate(keys))
        made = [_key(i) for i in range(8)] + [_key(i) for i in range(100, next(fresh))]
        assert all(positions.get(key) is None for key in made if key not in keys)


def test_the_digest_of_lists_longer_than_a_block_is_that_of_the_whole_list_at_once() -> None:
    # Lists of a block, a block and one, and several blocks with a remainder, changed and unchanged: the
    # names reach the digest a block at a time, with the same bytes as one join of the whole list.
    sizes = [DIGEST_BLOCK, DIGEST_BLOCK + 1, 3 * DIGEST_BLOCK + 17, 3 * DIGEST_BLOCK + 17, 2 * DIGEST_BLOCK]
    lists = [[_key(i) for i in range(size)] for size in sizes]
    lists[3] = [*lists[3][:100], _key(50_000), *lists[3][101:]]
    telemetry = Telemetry(remote_write_url=None)
    for k, listed in enumerate(lists):
        telemetry.record(15.0 * k, list(listed), [float(i) for i in range(len(listed))])
    assert telemetry.digest == _naive(lists)[0]
