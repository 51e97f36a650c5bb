"""Helpers of the twin tests: a real Prometheus, a served twin, PromQL at simulated instants."""

from __future__ import annotations

import shutil
import struct
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import cramjam
import httpx
import pytest
from prometheus_remote_writer.proto.remote_pb2 import WriteRequest

from orchestrator.telemetry.server import PrometheusServer, start_prometheus
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.timefmt import EPOCH

OB = "online-boutique"
CHECKOUT_ERRORS = (
    'sum(rate(traces_span_metrics_calls_total{{namespace="online-boutique", service_name="frontend", '
    'span_kind="SPAN_KIND_SERVER", span_name="POST /cart/checkout", status_code="STATUS_CODE_ERROR"}}[{w}]))'
    ' / sum(rate(traces_span_metrics_calls_total{{namespace="online-boutique", service_name="frontend", '
    'span_kind="SPAN_KIND_SERVER", span_name="POST /cart/checkout"}}[{w}]))'
)
HOME_P99 = (
    "histogram_quantile(0.99, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket{{"
    'namespace="online-boutique", service_name="frontend", span_kind="SPAN_KIND_SERVER", span_name="GET /"}}'
    "[{w}])))"
)


def prometheus(tmp: Path) -> Iterator[PrometheusServer]:
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed")
    server = start_prometheus(tmp)
    try:
        yield server
    finally:
        server.stop()


def served(
    tmp: Path,
    *,
    app: str = OB,
    seed: int = 11,
    remote_write_url: str | None = None,
    keep_samples: bool = False,
) -> RunningTwin:
    return start_twin(
        app,
        seed=seed,
        kubeconfig=tmp / "kubeconfig",
        remote_write_url=remote_write_url,
        keep_samples=keep_samples,
    )


def query(server: PrometheusServer, promql: str, *, at: float) -> float:
    """The single value of ``promql`` at simulated time ``at`` (NaN when the result is empty)."""
    response = httpx.get(
        f"{server.url}/api/v1/query",
        params={"query": promql, "time": f"{EPOCH.timestamp() + at:.3f}"},
        timeout=30,
    )
    response.raise_for_status()
    result = response.json()["data"]["result"]
    if not result:
        return float("nan")
    return float(result[0]["value"][1])


def written_by(bodies: list[bytes]) -> tuple[Counter[tuple[object, ...]], list[tuple[tuple[str, str], ...]]]:
    """What posted bodies write: each TimeSeries (labels, and samples as timestamps and value bits), and the
    series in the order they first reach the receiver."""
    written: Counter[tuple[object, ...]] = Counter()
    first: dict[tuple[tuple[str, str], ...], None] = {}
    for body in bodies:
        for one in WriteRequest.FromString(bytes(cramjam.snappy.decompress_raw(body))).timeseries:
            labels = tuple((label.name, label.value) for label in one.labels)
            first.setdefault(labels)
            samples = tuple((s.timestamp, struct.pack("<d", s.value)) for s in one.samples)
            written[(labels, samples)] += 1
    return written, list(first)


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[bytes]
    before: Callable[[bytes], None] | None = None

    def do_POST(self) -> None:  # noqa: N802 - the name http.server looks up
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.before is not None:
            self.before(body)
        self.bodies.append(body)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        return


@contextmanager
def write_receivers(
    count: int, *, before: Callable[[bytes], None] | None = None
) -> Iterator[list[tuple[str, list[bytes]]]]:
    """``count`` remote-write endpoints on 127.0.0.1 that keep every body posted to them, in the order they
    are through with them: (URL, bodies). ``before`` sees each body first, in the request's thread."""
    servers, found = [], []
    for _ in range(count):
        bodies: list[bytes] = []
        handler = type("Receiver", (_Receiver,), {"bodies": bodies, "before": staticmethod(before)})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        found.append((f"http://127.0.0.1:{server.server_address[1]}/api/v1/write", bodies))
    try:
        yield found
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
