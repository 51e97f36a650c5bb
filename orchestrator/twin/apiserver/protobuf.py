"""Decoding of the Kubernetes protobuf request bodies kubectl sends for built-in kinds.

Since 1.32 the typed clients inside kubectl (``kubectl create deployment|configmap|secret|namespace``,
``kubectl auth can-i``, the evictions of ``kubectl drain``) encode their bodies as
``application/vnd.kubernetes.protobuf`` and have no fallback to JSON, so the twin reads them as a
kube-apiserver does: the ``k8s\\x00`` magic, a ``runtime.Unknown`` envelope naming apiVersion and kind, the
object's message inside. Field numbers come from ``k8s_proto_fields.json``, a table generated from
Kubernetes' ``generated.proto`` files and Go types (``tools/k8s_proto_fields.py``). The result is the
object as its JSON form would have been: the zero values Go's ``omitempty`` leaves out are left out.

Responses stay JSON: kubectl accepts ``application/vnd.kubernetes.protobuf,application/json``.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from orchestrator.errors import ApiStatusError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_RAW = ("k8s.io.apimachinery.pkg.runtime.RawExtension", f"{_META}.FieldsV1")
_TIMES = (f"{_META}.Time", f"{_META}.MicroTime")
_DURATION = f"{_META}.Duration"
_SIGNED = ("int32", "int64", "sint32", "sint64", "sfixed32", "sfixed64")
_SCALARS = {"string", "bytes", "bool", "double", "float", "int32", "int64", "uint32", "uint64", "fixed32",
            "fixed64", "sint32", "sint64", "sfixed32", "sfixed64"}  # fmt: skip

Field = tuple[int, int, Any]  # number, wire type, int or bytes


@cache
def _table() -> dict[str, dict[int, list[str]]]:
    text = resources.files("orchestrator.twin.apiserver").joinpath("k8s_proto_fields.json").read_text()
    raw: dict[str, dict[str, list[str]]] = json.loads(text)
    return {name: {int(n): f for n, f in fields.items()} for name, fields in raw.items()}


def _unsupported(detail: str) -> ApiStatusError:
    return ApiStatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json, application/yaml{detail}",
    )


def _bad(message: str) -> ApiStatusError:
    return ApiStatusError(400, "BadRequest", f"unable to decode protobuf body: {message}")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise _bad("truncated varint")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> list[Field]:
    out: list[Field] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        else:
            raise _bad(f"unsupported wire type {wire}")
        if i > len(buf):
            raise _bad("truncated field")
        out.append((number, wire, value))
    return out


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode("utf-8")
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if kind in ("double", "float", "fixed32", "fixed64", "sfixed32", "sfixed64") and wire in (1, 5):
        fmt = {"double": "<d", "float": "<f", "fixed32": "<I", "fixed64": "<Q", "sfixed32": "<i"}
        return struct.unpack(fmt.get(kind, "<q"), bytes(value))[0]
    if not isinstance(value, int):
        raise _bad(f"a {kind} field has wire type {wire}")
    if kind == "bool":
        return value != 0
    if kind in ("sint32", "sint64"):
        return (value >> 1) ^ -(value & 1)
    if kind in _SIGNED and value >= 1 << 63:
        return value - (1 << 64)
    return value


def _packed(kind: str, value: bytes) -> list[Any]:
    items: list[Any] = []
    i = 0
    if kind in ("double", "fixed64", "sfixed64", "float", "fixed32", "sfixed32"):
        width = 8 if kind in ("double", "fixed64", "sfixed64") else 4
        return [
            _scalar(kind, 1 if width == 8 else 5, value[j : j + width]) for j in range(0, len(value), width)
        ]
    while i < len(value):
        item, i = _varint(value, i)
        items.append(_scalar(kind, 0, item))
    return items


def _go_duration(nanos: int) -> str:
    seconds = nanos / 1e9
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text


def _special(name: str, buf: bytes) -> Any:
    values = {n: v for n, _w, v in _fields(buf)}
    if name == _QUANTITY:
        return bytes(values.get(1, b"")).decode()
    if name == _INT_OR_STRING:
        return (
            bytes(values.get(3, b"")).decode()
            if values.get(1) == 1
            else _scalar("int32", 0, values.get(2, 0))
        )
    if name in _RAW:
        raw = bytes(values.get(1, b""))
        return json.loads(raw) if raw.strip() else None
    if name in _TIMES:
        if 1 not in values and 2 not in values:
            return None
        seconds = _scalar("int64", 0, values.get(1, 0)) + values.get(2, 0) / 1e9
        moment = datetime.fromtimestamp(seconds, UTC)
        if name.endswith("MicroTime"):
            return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return _go_duration(_scalar("int64", 0, values.get(1, 0)))


def _message(name: str, buf: bytes) -> Any:
    if name in (_QUANTITY, _INT_OR_STRING, *_RAW, *_TIMES, _DURATION):
        return _special(name, buf)
    spec = _table().get(name)
    if spec is None:
        raise _unsupported("")
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(buf):
        field = spec.get(number)
        if field is None:
            continue  # a field newer than the table: dropped, as an older server does
        key, cardinality, kind = field[0], field[1], field[2]
        flags = field[3] if len(field) > 3 else ""
        if cardinality == "m":
            key_kind, value_kind = kind.split(",")
            entry = {n: (w, v) for n, w, v in _fields(bytes(value))}
            k = _value(key_kind, *entry.get(1, (2, b"")))
            obj.setdefault(key, {})[k] = _value(value_kind, *entry.get(2, (2, b"")))
        elif cardinality == "r":
            if kind in _SCALARS and kind not in ("string", "bytes") and wire == 2:
                obj.setdefault(key, []).extend(_packed(kind, bytes(value)))
            else:
                obj.setdefault(key, []).append(_value(kind, wire, value))
        elif "i" in flags:  # embedded inline in the JSON form
            inner = _value(kind, wire, value)
            if isinstance(inner, dict):
                obj.update(inner)
        else:
            decoded = _value(kind, wire, value)
            # Go's JSON leaves out an omitempty value's zero (protobuf carries it) and a nil time.
            if decoded is None or ("z" in flags and kind in _SCALARS and not decoded):
                obj.pop(key, None)
            else:
                obj[key] = decoded
    return obj


def _value(kind: str, wire: int, value: Any) -> Any:
    if kind in _SCALARS:
        return _scalar(kind, wire, value)
    if wire != 2:
        raise _bad(f"a {kind} field has wire type {wire}")
    return _message(kind, bytes(value))


def _message_name(api_version: str, kind: str) -> str | None:
    group, _, version = api_version.rpartition("/")
    package = group.split(".")[0] if group else "core"
    table = _table()
    for name in (f"k8s.io.api.{package}.{version}.{kind}", f"{_META}.{kind}"):
        if name in table:
            return name
    return None


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a ``k8s\\x00``-framed protobuf object; 415 for kinds the twin cannot decode."""
    if not body.startswith(MAGIC):
        raise _bad("the body lacks the k8s protobuf magic number")
    envelope = {n: v for n, _w, v in _fields(body[len(MAGIC) :])}
    type_meta = {n: bytes(v).decode() for n, _w, v in _fields(bytes(envelope.get(1, b"")))}
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    name = _message_name(api_version, kind)
    if name is None:
        raise _unsupported(f" (no protobuf form of {kind or 'this object'} {api_version})")
    decoded = _message(name, bytes(envelope.get(2, b"")))
    return {"kind": kind, "apiVersion": api_version, **decoded}
