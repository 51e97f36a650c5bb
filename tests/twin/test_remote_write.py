"""The twin's hand-written remote-write encoding is the protobuf runtime's, byte for byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_remote_writer.proto.remote_pb2 import WriteRequest
from prometheus_remote_writer.proto.types_pb2 import Label, Sample, TimeSeries

from orchestrator.twin.observe.metrics import Key
from orchestrator.twin.observe.remote_write import Encoder, Scrape, varint
from orchestrator.twin.observe.telemetry import STALE_NAN

T0 = 1_767_225_600_000


def _reference(scrapes: list[Scrape]) -> bytes:
    """What the protobuf runtime writes for the same scrapes: one TimeSeries per series in order of first
    appearance, samples in time order."""
    series: dict[tuple[str, tuple[tuple[str, str], ...]], TimeSeries] = {}
    for ts, keys, values in scrapes:
        for (name, labels), value in zip(keys, values, strict=True):
            one = series.get((name, labels))
            if one is None:
                one = series[(name, labels)] = TimeSeries()
                for key, text in (("__name__", name), *labels):
                    one.labels.append(Label(name=key, value=text))
            one.samples.append(Sample(value=value, timestamp=ts))
    request = WriteRequest()
    request.timeseries.extend(series.values())
    return bytes(request.SerializeToString())


def test_scrapes_encode_exactly_as_the_protobuf_runtime_writes_them() -> None:
    up = ("up", (("job", "frontend"), ("namespace", "boutique")))
    empty = ("errors_total", (("reason", ""), ("service", "cart")))
    late = ("late_series", (("pod", "x-1"),))
    scrapes: list[Scrape] = [
        (T0, [up, empty], [1.0, 0.0]),
        (T0 + 15_000, [up, empty, late], [-0.0, 3.5e-300, 2.0**70]),
        (T0 + 30_000, [up, late, empty], [float("inf"), STALE_NAN, -12.25]),
    ]
    assert b"".join(Encoder().push(scrapes, max_series=5000).bodies) == _reference(scrapes)


def test_requests_hold_at_most_the_series_asked_for() -> None:
    keys = [(f"m{i}", (("i", str(i)),)) for i in range(5)]
    scrapes: list[Scrape] = [(T0, keys, [float(i) for i in range(5)])]
    bodies = list(Encoder().push(scrapes, max_series=2).bodies)
    assert len(bodies) == 3
    assert [len(WriteRequest.FromString(body).timeseries) for body in bodies] == [2, 2, 1]
    assert b"".join(bodies) == _reference(scrapes)


def test_varints_are_protobufs() -> None:
    assert [varint(n) for n in (0, 1, 127, 128, 300)] == [b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xac\x02"]


def test_scrapes_of_the_same_series_and_a_scrape_repeating_a_series_encode_as_the_runtime_writes() -> None:
    keys = [("up", (("job", str(i)),)) for i in range(4)]
    same: list[Scrape] = [(T0 + 15_000 * k, keys, [float(k * i) for i in range(4)]) for k in range(3)]
    assert b"".join(Encoder().push(same, max_series=5000).bodies) == _reference(same)
    repeated: list[Scrape] = [(T0, [keys[0], keys[1], keys[0]], [1.0, 2.0, 3.0])]
    assert b"".join(Encoder().push(repeated, max_series=5000).bodies) == _reference(repeated)


def test_pushes_whose_series_change_part_way_encode_as_the_runtime_writes() -> None:
    """Runs of scrapes whose lists gain series in the middle, lose some, move one and end with stale ones,
    as a run with restarting pods and new span keys pushes them."""
    base = [("m", (("i", f"{i:03d}"),)) for i in range(40)]
    inserted = base[:10] + [("m", (("i", "new"),)), ("n", ())] + base[10:]
    dropped = [key for key in inserted if key not in (base[3], base[30])]
    moved = [*dropped[:5], dropped[20], *dropped[5:20], *dropped[21:], base[3]]
    lists = [base, base, inserted, dropped, moved, list(moved), base[:2]]
    scrapes: list[Scrape] = [
        (T0 + 15_000 * k, keys, [float((i + k) % 3) - 1.0 for i in range(len(keys))])
        for k, keys in enumerate(lists)
    ]
    assert b"".join(Encoder().push(scrapes, max_series=5000).bodies) == _reference(scrapes)


@settings(max_examples=200, deadline=None)
@given(
    edits=st.lists(
        st.lists(st.tuples(st.sampled_from(["add", "drop", "move"]), st.integers(0, 10_000)), max_size=4),
        min_size=1,
        max_size=8,
    ),
    zeros=st.lists(st.sampled_from([0.0, -0.0, 1.5, STALE_NAN]), min_size=1, max_size=7),
)
def test_any_changes_of_series_between_scrapes_encode_as_the_runtime_writes(
    edits: list[list[tuple[str, int]]], zeros: list[float]
) -> None:
    keys = [("m", (("i", str(i)),)) for i in range(12)]
    fresh = iter(range(100, 10_000))
    scrapes: list[Scrape] = []
    for k, changes in enumerate(edits):
        keys = list(keys)
        for edit, at in changes:
            if edit == "add":
                keys.insert(at % (len(keys) + 1), ("m", (("i", str(next(fresh))),)))
            elif keys and edit == "drop":
                del keys[at % len(keys)]
            elif keys:
                keys.insert(at // 7 % len(keys), keys.pop(at % len(keys)))
        values = [zeros[(i + k) % len(zeros)] for i in range(len(keys))]
        scrapes.append((T0 + 15_000 * k, keys if changes else scrapes[-1][1] if scrapes else keys, values))
    assert b"".join(Encoder().push(scrapes, max_series=5000).bodies) == _reference(scrapes)


def test_labels_found_by_key_object_follow_keys_made_and_dropped_again_and_again() -> None:
    """Each round scrapes key objects made afresh, of series seen in earlier rounds and new ones; the last
    round's objects are dropped, so their ids come free for other keys. Every request is still the protobuf
    runtime's for that round's series."""
    encoder = Encoder()
    for round_ in range(80):
        keys = [(f"m{i % 3}", (("pod", f"p-{(round_ * 7 + i * 5) % 90}"),)) for i in range(40)]
        keys = list(dict.fromkeys(keys))
        scrapes: list[Scrape] = [(T0 + 15_000 * round_, keys, [float(i) for i in range(len(keys))])]
        if round_ % 2:
            later = [*keys[10:], ("extra", (("n", str(round_)),))]
            scrapes.append((T0 + 15_000 * round_ + 5, later, [1.0] * len(later)))
        assert b"".join(encoder.push(scrapes, max_series=5000).bodies) == _reference(scrapes), round_
        del keys, scrapes


def test_series_the_previous_push_had_go_in_requests_after_the_others() -> None:
    """A push's series that were not in the encoder's previous push (new ones, and equal ones under other key
    objects, which the encoder cannot tell from new) come first, in requests of their own; the rest follow.
    Each part holds its series in order of first appearance, as the protobuf runtime writes them."""
    keys = [("m", (("i", str(i)),)) for i in range(6)]
    encoder = Encoder()
    first = encoder.push([(T0, keys, [1.0] * 6)], max_series=4)
    assert first.rest == [] and b"".join(first.ordered) == _reference([(T0, keys, [1.0] * 6)])
    remade = ("m", (("i", "4"),))  # equal to keys[4], another object
    later = [keys[0], ("m", (("i", "new"),)), keys[1], keys[2], keys[3], remade, keys[5]]
    scrapes: list[Scrape] = [(T0 + 15_000, later, [2.0] * 7), (T0 + 30_000, later[:3], [3.0] * 3)]
    push = encoder.push(scrapes, max_series=4)

    def only(wanted: set[Key]) -> list[Scrape]:
        return [
            (ts, [k for k in ks if k in wanted], [v[0]] * sum(k in wanted for k in ks))
            for ts, ks, v in scrapes
        ]

    fresh = {later[1], remade}
    assert b"".join(push.ordered) == _reference(only(fresh))
    assert b"".join(push.rest) == _reference(only(set(later) - fresh))
    assert [len(push.ordered), len(push.rest)] == [1, 2]  # 2 series, then 5 in requests of at most 4
    encoder.forget()  # the last push did not reach Prometheus: every series may be new again
    again = encoder.push(scrapes, max_series=4)
    assert again.rest == [] and b"".join(again.ordered) == _reference(scrapes)
