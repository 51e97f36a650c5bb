"""A twin's scrapes held until it is given a Prometheus reach it as they would have from the start."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.errors import TelemetryError
from orchestrator.twin.observe.telemetry import SCRAPES_PER_PUSH, Telemetry
from tests.twin.twin_support import write_receivers, written_by


@pytest.fixture
def receivers() -> Iterator[list[tuple[str, list[bytes]]]]:
    with write_receivers(2) as found:
        yield found


def _scrape(telemetry: Telemetry, k: int) -> None:
    # A series that comes at the third scrape and one that goes at the sixth: staleness markers too.
    samples = [("up", (("pod", "a"),), float(k))]
    if k >= 3:
        samples.append(("up", (("pod", "b"),), 2.0 * k))
    if k < 6:
        samples.append(("load", (("pod", "a"),), k / 3))
    telemetry.scrape(15.0 * k, samples)


def test_held_scrapes_are_pushed_as_a_twin_with_the_url_from_the_start_pushes_them(
    receivers: list[tuple[str, list[bytes]]],
) -> None:
    (direct_url, direct_bodies), (held_url, held_bodies) = receivers
    direct, held = Telemetry(remote_write_url=direct_url), Telemetry(remote_write_url=None)
    held.hold()
    scrapes = 2 * SCRAPES_PER_PUSH + SCRAPES_PER_PUSH // 2
    try:
        for k in range(1, scrapes + 1):
            _scrape(direct, k)
            _scrape(held, k)
            if k == SCRAPES_PER_PUSH + 2:
                assert held_bodies == []
                held.send_to(held_url)
        direct.flush()
        held.flush()
    finally:
        direct.close()
        held.close()
    assert len(held_bodies) >= 3  # a request at least per push: two full ones and the flush's half
    # The same series and samples, new series in the same order (requests may be cut otherwise: the
    # pushing child knows series by the key objects it rebuilt, which the twin made afresh).
    assert written_by(held_bodies) == written_by(direct_bodies)
    assert held.pushed_samples == direct.pushed_samples and held.digest == direct.digest


def test_a_twin_that_pushes_already_neither_holds_nor_takes_another_url() -> None:
    telemetry = Telemetry(remote_write_url="http://127.0.0.1:9/api/v1/write")
    try:
        with pytest.raises(TelemetryError, match="already go to"):
            telemetry.hold()
        with pytest.raises(TelemetryError, match="already go to"):
            telemetry.send_to("http://127.0.0.1:10/api/v1/write")
    finally:
        telemetry.close()


def test_a_twin_without_a_digest_pushes_the_same_and_tells_no_digest(
    receivers: list[tuple[str, list[bytes]]],
) -> None:
    (with_url, with_bodies), (without_url, without_bodies) = receivers
    kept, unkept = Telemetry(remote_write_url=with_url), Telemetry(remote_write_url=without_url, digest=False)
    try:
        for k in range(1, 3 * SCRAPES_PER_PUSH):
            _scrape(kept, k)
            _scrape(unkept, k)
        kept.flush()
        unkept.flush()
    finally:
        kept.close()
        unkept.close()
    assert without_bodies == with_bodies and len(with_bodies) >= 3
    assert kept.digest is not None and unkept.digest is None
    assert unkept.pushed_samples == kept.pushed_samples
