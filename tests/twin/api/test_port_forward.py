"""pods/portforward on the twin: kubectl port-forward (SPDY/3.1 tunnelled through a WebSocket) reaches a pod's
declared port, where the simulated container answers HTTP with the pod's health; the SPDY framing and the
header dictionary on their own."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import urllib.error
import urllib.request
import zlib

import pytest

from orchestrator.twin.apiserver import portforward as pf
from tests.twin.api.support import LiveServer, ScriptedRuntime, forwarding, http_get, run

KUBECTL = shutil.which("kubectl")


def test_the_header_dictionary_is_the_spdy3_one() -> None:
    # 1,423 bytes, as the SPDY/3 draft defines them (the same bytes every SPDY/3 implementation uses).
    assert len(pf.DICTIONARY) == 1423
    assert hashlib.sha256(pf.DICTIONARY).hexdigest() == (
        "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"
    )


def test_frames_are_taken_whole_and_header_blocks_round_trip_through_the_dictionary() -> None:
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=pf.DICTIONARY)
    inflate = zlib.decompressobj(zdict=pf.DICTIONARY)
    headers = {"streamType": "data", "port": "8080", "requestID": "0"}
    block = deflate.compress(pf.header_block(headers)) + deflate.flush(zlib.Z_SYNC_FLUSH)
    syn = pf.control_frame(pf.SYN_STREAM, b"\x00\x00\x00\x03" + b"\x00\x00\x00\x00" + b"\x00\x00" + block)
    data = pf.data_frame(3, b"GET / HTTP/1.1\r\n\r\n", pf.FLAG_FIN)
    buffer = bytearray(syn + data[:5])
    first = pf.parse_frames(buffer)
    assert [f.kind for f in first] == [pf.SYN_STREAM] and len(buffer) == 5  # the partial frame waits
    buffer += data[5:]
    (second,) = pf.parse_frames(buffer)
    assert (second.kind, second.stream, second.flags, second.payload) == (0, 3, 1, b"GET / HTTP/1.1\r\n\r\n")
    assert pf.read_header_block(inflate.decompress(first[0].payload[10:])) == {
        "streamtype": "data", "port": "8080", "requestid": "0"
    }  # fmt: skip


def test_kubectl_port_forward_to_a_service_reaches_its_pod_and_gets_its_health(server: LiveServer) -> None:
    with forwarding(KUBECTL, server, "svc/frontend", "80") as port:
        assert [http_get(port) for _ in range(3)] == [
            (200, "ok\n")
        ] * 3  # one SPDY session, a stream pair each


def test_an_unready_pod_answers_503_and_an_undeclared_port_is_refused(
    server: LiveServer, runtime: ScriptedRuntime
) -> None:
    runtime.unready.add("shop/cart:1.0")
    with server.cluster.lock:
        run(server.cluster, 30)
    with forwarding(KUBECTL, server, "deploy/cart", "8080") as port:
        assert http_get(port) == (503, "unavailable\n")
    with (
        forwarding(KUBECTL, server, "deploy/cart", "9999") as port,
        pytest.raises((urllib.error.URLError, OSError)),
    ):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30)


def test_a_missing_pod_is_refused_before_the_upgrade(server: LiveServer) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH")
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(server.kubeconfig), "port-forward", "pod/none", ":80"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and 'pods "none" not found' in done.stderr
