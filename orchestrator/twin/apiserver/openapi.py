"""The OpenAPI documents of the twin's API server and the strict field validation they drive.

The schemas are the official ones of the Kubernetes version the twin serves, as the maintained
``kubernetes-validate`` package ships them (JSON Schema, every type nullable, references under ``$defs``).
They are turned back into OpenAPI form: ``/openapi/v2`` (``definitions``) and ``/openapi/v3/<gv>``
(``components.schemas``, one document per group version with the schemas its kinds reach), which
``kubectl explain`` reads, and walked by ``drop_unknown_fields`` for ``fieldValidation``.

Everything is loaded on first use and kept: importing this module costs nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import struct
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.twin.resources import KUBERNETES_VERSION, RESOURCE_TYPES, ResourceType

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# Messages every group version's operations carry, as on a kube-apiserver.
_COMMON = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
)


@cache
def definitions() -> dict[str, Any]:
    """The schemas of KUBERNETES_VERSION by definition name (``io.k8s.api.apps.v1.Deployment``)."""
    # Only the package's data is read: its code is never imported.
    package = importlib.util.find_spec("kubernetes_validate")
    if package is None or package.origin is None:
        raise RuntimeError("the twin's schemas come from kubernetes-validate, which is not installed")
    minor = ".".join(KUBERNETES_VERSION.lstrip("v").split(".")[:2])
    root = Path(package.origin).parent / "kubernetes-json-schema" / f"v{minor}.0-local"
    loaded: dict[str, Any] = json.loads((root / "_definitions.json").read_text())["$defs"]
    return loaded


def _openapi(schema: Any, prefix: str) -> Any:
    """A JSON Schema node back in OpenAPI form: single types, ``prefix`` references, no null."""
    if isinstance(schema, list):
        return [_openapi(item, prefix) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema and len(schema) > 1 and prefix.startswith("#/components"):
        # OpenAPI 3.0 ignores the siblings of a reference: the API server wraps it, keeping its description.
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {"allOf": [{"$ref": prefix + schema["$ref"].rsplit("/", 1)[-1]}], **_openapi(rest, prefix)}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = prefix + value.rsplit("/", 1)[-1]
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if kinds:
                out[key] = kinds[0]
        elif key == "enum" and isinstance(value, list):
            out[key] = [v for v in value if v is not None]
        elif key == "properties":
            out[key] = {k: _openapi(v, prefix) for k, v in value.items()}
        elif key in ("x-kubernetes-group-version-kind", "required", "x-kubernetes-list-map-keys"):
            out[key] = value
        else:
            out[key] = _openapi(value, prefix)
    return out


def _definition(name: str, prefix: str) -> dict[str, Any]:
    schema = definitions()[name]
    converted: dict[str, Any] = _openapi(schema, prefix)
    if name in (_INT_OR_STRING, _QUANTITY):
        # v3 keeps their oneOf (kubectl explain shows <IntOrString>, <Quantity>); v2 has no oneOf.
        description = {"description": schema["description"]} if "description" in schema else {}
        if prefix.startswith("#/definitions"):
            converted = {"type": "string", **description}
        if name == _INT_OR_STRING:
            converted["format"] = "int-or-string"
    return converted


def _refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = [schema["$ref"].rsplit("/", 1)[-1]] if "$ref" in schema else []
        return found + [r for v in schema.values() for r in _refs(v)]
    if isinstance(schema, list):
        return [r for v in schema for r in _refs(v)]
    return []


def _reachable(roots: list[str]) -> list[str]:
    defs = definitions()
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]))
    return sorted(seen)


@cache
def _by_kind() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            index.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return index


def definition_name(rtype: ResourceType) -> str | None:
    """The schema of a served kind; None for kinds the official schemas lack (the chaos kinds)."""
    return _by_kind().get((rtype.group, rtype.version, rtype.kind))


def _kinds(group: str, version: str) -> list[str]:
    names: list[str] = []
    for rtype in RESOURCE_TYPES:
        if rtype.group == group and rtype.version == version:
            for kind in (rtype.kind, rtype.list_kind):
                found = _by_kind().get((group, version, kind))
                if found:
                    names.append(found)
    return names


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _group_versions() -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for rtype in RESOURCE_TYPES:
        if (rtype.group, rtype.version) not in pairs:
            pairs.append((rtype.group, rtype.version))
    return pairs


def _operations(group: str, version: str) -> dict[str, Any]:
    """The PATCH operation of every kind, declaring ``fieldValidation``: kubectl reads it to leave
    validation to the server."""
    paths: dict[str, Any] = {}
    for rtype in RESOURCE_TYPES:
        if rtype.group != group or rtype.version != version:
            continue
        scope = "/namespaces/{namespace}" if rtype.namespaced else ""
        paths[f"/{_gv_path(group, version)}{scope}/{rtype.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{rtype.kind}",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": rtype.kind},
                "parameters": [
                    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                    for name in ("fieldValidation", "fieldManager")
                ],
                "requestBody": {
                    "content": {
                        "application/json-patch+json": {"schema": {"type": "object"}},
                        "application/merge-patch+json": {"schema": {"type": "object"}},
                    }
                },
                "responses": {"200": {"description": "OK"}},
            }
        }
    return paths


@cache
def v3_documents() -> dict[str, bytes]:
    """Every group version's OpenAPI 3 document, rendered, by path (``apis/apps/v1``)."""
    documents: dict[str, bytes] = {}
    for group, version in _group_versions():
        names = _reachable([*_kinds(group, version), *_COMMON])
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
            "paths": _operations(group, version),
            "components": {"schemas": {n: _definition(n, "#/components/schemas/") for n in names}},
        }
        documents[_gv_path(group, version)] = json.dumps(document, separators=(",", ":")).encode()
    return documents


@cache
def v3_index() -> dict[str, Any]:
    """``/openapi/v3``: one document per group version, each URL carrying its content's hash, so a
    client's cache is renewed when the document changes."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={hashlib.sha512(body).hexdigest()[:32]}"}
            for path, body in v3_documents().items()
        }
    }


@cache
def v2_document() -> bytes:
    """``/openapi/v2`` as JSON: the definitions of every served kind, the same schemas as v3."""
    names = _reachable([n for g, v in _group_versions() for n in _kinds(g, v)] + list(_COMMON))
    document = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": {},
        "definitions": {n: _definition(n, "#/definitions/") for n in names},
    }
    return json.dumps(document, separators=(",", ":")).encode()


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = definitions().get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _walk(schema: dict[str, Any], value: Any, path: str, found: list[str]) -> None:
    """Collect the unknown fields under ``value`` into ``found`` and remove them, as the API server's
    decoder drops them; ``$``-keys (a strategic merge patch's directives) are left alone."""
    schema = _resolve(schema)
    if schema.get("x-kubernetes-preserve-unknown-fields") or "oneOf" in schema:
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if properties is None:
            if isinstance(extra, dict):
                for key, item in value.items():
                    _walk(extra, item, f"{path}.{key}" if path else key, found)
            return
        for key in list(value):
            where = f"{path}.{key}" if path else key
            if key in properties:
                _walk(properties[key], value[key], where, found)
            elif not key.startswith("$"):
                found.append(where)
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{index}]", found)


def drop_unknown_fields(rtype: ResourceType, obj: Any) -> list[str]:
    """Remove from ``obj`` (an object or a merge patch of one) the fields the official schema of its kind
    does not know, and return their paths (``spec.foo``, ``spec.template.spec.containers[0].bogus``) in
    document order; kinds without a schema (the chaos kinds) are left as they are."""
    name = definition_name(rtype)
    if name is None:
        return []
    found: list[str] = []
    _walk(definitions()[name], obj, "", found)
    return found


# -- /openapi/v2 in protobuf: gnostic's OpenAPIv2 Document, which Go clients ask for -----------------------
# What clients ask for (the older, deprecated spelling with "@" too); the answer is typed with the new one,
# as Go's media type parser refuses the "@".
V2_PROTOBUF_ASKED = (
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _key(number: int, wire: int) -> bytes:
    return _uvarint(number << 3 | wire)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + _uvarint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML text (JSON is YAML)."""
    return _text(2, json.dumps(value, separators=(",", ":")))


def _schema_pb(schema: dict[str, Any]) -> bytes:
    out = bytearray()
    for number, key in ((1, "$ref"), (2, "format"), (3, "title"), (4, "description")):
        if isinstance(schema.get(key), str):
            out += _text(number, schema[key])
    if "default" in schema:
        out += _bytes(5, _any(schema["default"]))
    for number, key in ((7, "maximum"), (9, "minimum")):
        if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
            out += _key(number, 1) + struct.pack("<d", float(schema[key]))
    for name in schema.get("required") or []:
        out += _text(19, name)
    for value in schema.get("enum") or []:
        out += _bytes(20, _any(value))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out += _bytes(21, _bytes(1, _schema_pb(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _key(2, 0) + _uvarint(int(extra)))
    if isinstance(schema.get("type"), str):
        out += _bytes(22, _text(1, schema["type"]))
    if isinstance(schema.get("items"), dict):
        out += _bytes(23, _bytes(1, _schema_pb(schema["items"])))
    for part in schema.get("allOf") or []:
        out += _bytes(24, _schema_pb(part))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        named = b"".join(_bytes(1, _text(1, k) + _bytes(2, _schema_pb(v))) for k, v in properties.items())
        out += _bytes(25, named)
    if schema.get("readOnly") is True:
        out += _key(27, 0) + _uvarint(1)
    for key, value in schema.items():
        if key.startswith("x-"):
            out += _bytes(31, _text(1, key) + _bytes(2, _any(value)))
    return bytes(out)


@cache
def v2_protobuf() -> bytes:
    """``/openapi/v2`` as gnostic's protobuf Document: kubectl before 1.29 validates and explains from it."""
    document = json.loads(v2_document())
    info = _text(1, document["info"]["title"]) + _text(2, document["info"]["version"])
    definitions = b"".join(
        _bytes(1, _text(1, name) + _bytes(2, _schema_pb(schema)))
        for name, schema in document["definitions"].items()
    )
    return _text(1, document["swagger"]) + _bytes(2, info) + _bytes(8, b"") + _bytes(9, definitions)
