"""``pods/portforward`` as kubectl 1.31+ speaks it: SPDY/3.1 streams tunnelled through a WebSocket
(subprotocol ``SPDY/3.1+portforward.k8s.io``), the way the API server relays them to a kubelet.

For each local connection kubectl opens two SPDY streams with the headers ``streamType`` (``error`` or
``data``), ``port`` and ``requestID``; the twin accepts both (SYN_REPLY), and answers the data stream as the
pod's port would. A simulated container serves HTTP on the ports its spec declares: any request gets the
pod's health, ``200 ok`` while every container of the pod is ready and ``503`` otherwise, then the streams
are finished (FIN) as the connection closes. A port the pod does not declare is refused on the error stream,
as a kubelet reports a connection refused inside the pod.

The SPDY/3 framing (control and data frames, name/value header blocks compressed with zlib and the
protocol's dictionary, one compression context per direction) is written here; only what port forwarding
uses is handled: SYN_STREAM, SYN_REPLY, DATA, RST_STREAM, PING, GOAWAY (SETTINGS, HEADERS and
WINDOW_UPDATE are read and ignored).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from orchestrator.errors import ApiStatusError
from orchestrator.twin.apiserver.podexec import refuse
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.resources import BY_PLURAL

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
VERSION = 3
_PODS = BY_PLURAL[("", "pods")]

# The SPDY/3 header-compression dictionary (draft-mbelshe-httpbis-spdy-00, section 2.6.10.1): each word
# preceded by its 32-bit big-endian length, then the tail as it stands.
_WORDS = ["options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
          "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
          "content-base", "content-encoding", "content-language", "content-length", "content-location",
          "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
          "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
          "last-modified", "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization",
          "range", "referer", "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade",
          "user-agent", "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
          "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]  # fmt: skip
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


@dataclass(frozen=True)
class Frame:
    """One SPDY frame: a control frame (``kind`` > 0) or a data frame of ``stream`` (``kind`` 0)."""

    kind: int
    flags: int
    payload: bytes
    stream: int = 0


def parse_frames(buffer: bytearray) -> list[Frame]:
    """Take every whole frame off the front of ``buffer`` (a partial one stays for the next bytes)."""
    frames: list[Frame] = []
    while len(buffer) >= 8:
        first, second = struct.unpack(">II", buffer[:8])
        length = second & 0xFFFFFF
        if len(buffer) < 8 + length:
            break
        payload = bytes(buffer[8 : 8 + length])
        del buffer[: 8 + length]
        flags = second >> 24
        if first & 0x80000000:
            frames.append(Frame(kind=first & 0xFFFF, flags=flags, payload=payload))
        else:
            frames.append(Frame(kind=0, flags=flags, payload=payload, stream=first & 0x7FFFFFFF))
    return frames


def control_frame(kind: int, payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream: int, data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">II", stream & 0x7FFFFFFF, (flags << 24) | len(data)) + data


def header_block(headers: Mapping[str, str]) -> bytes:
    """A name/value block, uncompressed: names lower-case, as SPDY/3 requires."""
    block = struct.pack(">I", len(headers))
    for name, value in headers.items():
        for text in (name.lower().encode(), value.encode()):
            block += struct.pack(">I", len(text)) + text
    return block


def read_header_block(block: bytes) -> dict[str, str]:
    (count,) = struct.unpack(">I", block[:4])
    at, found = 4, {}
    for _ in range(count):
        pair = []
        for _part in range(2):
            (size,) = struct.unpack(">I", block[at : at + 4])
            pair.append(block[at + 4 : at + 4 + size].decode())
            at += 4 + size
        found[pair[0].lower()] = pair[1]
    return found


@dataclass
class Forwarded:
    """One forwarded connection (a ``requestID``): its two streams and what the client sent so far."""

    error_stream: int = 0
    data_stream: int = 0
    port: int = 0
    request: bytearray = field(default_factory=bytearray)
    answered: bool = False


def pod_ports(cluster: Cluster, namespace: str, name: str) -> tuple[set[int], bool]:
    """The ports ``name``'s containers declare and whether all its containers are ready; an API error when
    the pod does not exist or is not running (the API server refuses before the upgrade)."""
    with cluster.lock:
        pod = cluster.store.find(_PODS, namespace, name)
        if pod is None:
            raise ApiStatusError(
                404, "NotFound", f'pods "{name}" not found', details={"name": name, "kind": "pods"}
            )
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase != "Running":
            raise ApiStatusError(400, "BadRequest", f"pod {name} is not running (phase {phase})")
        ports = {
            int(port["containerPort"])
            for container in pod.get("spec", {}).get("containers") or []
            for port in container.get("ports") or []
            if "containerPort" in port
        }
        statuses = pod.get("status", {}).get("containerStatuses") or []
        ready = bool(statuses) and all(s.get("ready") for s in statuses)
    return ports, ready


def health_response(ready: bool) -> bytes:
    status, body = ("200 OK", b"ok\n") if ready else ("503 Service Unavailable", b"unavailable\n")
    head = (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")  # fmt: skip
    return head.encode() + body


class Session:
    """The server side of one tunnelled SPDY connection to a pod."""

    def __init__(self, websocket: WebSocket, cluster: Cluster, namespace: str, pod: str) -> None:
        self.websocket, self.cluster, self.namespace, self.pod = websocket, cluster, namespace, pod
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)
        self.deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
        self.connections: dict[str, Forwarded] = {}
        self.by_stream: dict[int, Forwarded] = {}

    async def send(self, frame: bytes) -> None:
        await self.websocket.send_bytes(frame)

    async def serve(self) -> None:
        buffer = bytearray()
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            buffer += message.get("bytes") or (message.get("text") or "").encode("latin-1")
            for frame in parse_frames(buffer):
                if not await self.handle(frame):
                    await self.websocket.close()
                    return

    async def handle(self, frame: Frame) -> bool:
        """Act on one frame; False when the client said it is done (GOAWAY)."""
        if frame.kind == SYN_STREAM:
            await self._open(frame)
        elif frame.kind == 0:
            await self._data(frame)
        elif frame.kind == PING:
            await self.send(control_frame(PING, frame.payload))
        elif frame.kind == RST_STREAM:
            (stream,) = struct.unpack(">I", frame.payload[:4])
            self.by_stream.pop(stream & 0x7FFFFFFF, None)
        elif frame.kind == GOAWAY:
            return False
        return True  # SETTINGS, HEADERS, WINDOW_UPDATE: nothing to do for a port forward

    async def _open(self, frame: Frame) -> None:
        (stream,) = struct.unpack(">I", frame.payload[:4])
        stream &= 0x7FFFFFFF
        headers = read_header_block(self.inflate.decompress(frame.payload[10:]))
        block = self.deflate.compress(header_block({})) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        await self.send(control_frame(SYN_REPLY, struct.pack(">I", stream) + block))
        forwarded = self.connections.setdefault(headers.get("requestid", str(stream)), Forwarded())
        forwarded.port = int(headers.get("port") or 0)
        if headers.get("streamtype") == "error":
            forwarded.error_stream = stream
        else:
            forwarded.data_stream = stream
        self.by_stream[stream] = forwarded
        if forwarded.error_stream and forwarded.data_stream:
            await self._connect(forwarded)

    async def _connect(self, forwarded: Forwarded) -> None:
        ports, _ready = pod_ports(self.cluster, self.namespace, self.pod)
        if forwarded.port not in ports:
            message = (f"error forwarding port {forwarded.port} to pod {self.pod}: dial tcp4 "
                       f"127.0.0.1:{forwarded.port}: connect: connection refused")  # fmt: skip
            await self._finish(forwarded, error=message.encode())

    async def _data(self, frame: Frame) -> None:
        forwarded = self.by_stream.get(frame.stream)
        if forwarded is None or frame.stream != forwarded.data_stream or forwarded.answered:
            return
        forwarded.request += frame.payload
        if b"\r\n\r\n" in forwarded.request or frame.flags & FLAG_FIN:
            _ports, ready = pod_ports(self.cluster, self.namespace, self.pod)
            await self._finish(forwarded, answer=health_response(ready))

    async def _finish(self, forwarded: Forwarded, *, answer: bytes = b"", error: bytes = b"") -> None:
        """Answer (or refuse) one connection, then close both its streams (FIN), as the pod's side closes."""
        forwarded.answered = True
        if answer:
            await self.send(data_frame(forwarded.data_stream, answer))
        if error:
            await self.send(data_frame(forwarded.error_stream, error))
        await self.send(data_frame(forwarded.data_stream, b"", FLAG_FIN))
        await self.send(data_frame(forwarded.error_stream, b"", FLAG_FIN))


async def serve_portforward(websocket: WebSocket, cluster: Cluster, namespace: str, pod: str) -> None:
    """One port-forward session; refused before the upgrade when the pod is missing or not running, or the
    client does not speak the tunnelled SPDY protocol."""
    offered = list(websocket.scope.get("subprotocols") or [])
    try:
        if PROTOCOL not in offered:
            raise ApiStatusError(
                400, "BadRequest", f"port forwarding needs the {PROTOCOL} WebSocket subprotocol"
            )
        pod_ports(cluster, namespace, pod)
    except ApiStatusError as error:
        await refuse(websocket, error, None)
        return
    await websocket.accept(subprotocol=PROTOCOL)
    try:
        await Session(websocket, cluster, namespace, pod).serve()
    except (WebSocketDisconnect, ConnectionError, RuntimeError):
        return


def check_portforward(cluster: Cluster, namespace: str, pod: str, query: Any) -> None:
    """A plain HTTP request (or SPDY's own upgrade, which the twin does not speak): the refusals of a
    WebSocket one, else the API server's answer to a request it cannot upgrade."""
    del query
    pod_ports(cluster, namespace, pod)
    raise ApiStatusError(400, "BadRequest", "Upgrade request required")
