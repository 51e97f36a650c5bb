"""Regenerate orchestrator/twin/apiserver/k8s_proto_fields.json from Kubernetes' generated.proto files.

The twin decodes the protobuf bodies kubectl (client-go >= 1.32) sends for built-in kinds. Protobuf carries
field numbers, not names: this table maps, per message, each field number to its JSON name, its cardinality
and its type, for the messages reachable from the kinds of the groups the twin decodes. A field Go embeds
inline in JSON (``Volume.volumeSource``, ``Probe.handler``) is marked so, found as the proto fields that are
no property of the kind's OpenAPI definition (kubernetes-validate's ``_definitions.json``). A field Go
leaves out of JSON when zero (a value, not a pointer, tagged omitempty: ``hostPort``, ``stdin``) is marked
too, from the Go types beside each generated.proto.

Usage: python tools/k8s_proto_fields.py API_CHECKOUT APIMACHINERY_CHECKOUT > .../k8s_proto_fields.json
(checkouts of k8s.io/api and k8s.io/apimachinery; field numbers never change, so any recent tag serves;
the newest schema kubernetes-validate ships tells which fields are inline).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import kubernetes_validate

API_GROUPS = [
    "core/v1",
    "apps/v1",
    "batch/v1",
    "discovery/v1",
    "policy/v1",
    "autoscaling/v1",
    "authorization/v1",
    "authentication/v1",
    "rbac/v1",
    "events/v1",
]
MACHINERY = ["pkg/apis/meta/v1", "pkg/runtime", "pkg/api/resource", "pkg/util/intstr"]
EXTRA_ROOTS = ["k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
_GO_FIELD = re.compile(r'^\s+\w+\s+(\S+)\s+`json:"([^"]*)"\s+protobuf:"[^"]*?,(\d+),[^"]*"')
_FIELD = re.compile(r"^\s*(optional|repeated)\s+(\S+)\s+(\w+)\s*=\s*(\d+)")
_MAP = re.compile(r"^\s*map<\s*(\w+)\s*,\s*(\S+)\s*>\s+(\w+)\s*=\s*(\d+)")


def parse(text: str) -> tuple[str, dict[str, dict[str, list[str]]]]:
    package = re.search(r"^package\s+([\w.]+);", text, re.M)
    assert package is not None
    messages: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for line in text.splitlines():
        if line.strip().startswith("//"):
            continue
        head = re.match(r"^message\s+(\w+)\s*\{", line)
        if head:
            current = messages.setdefault(f"{package.group(1)}.{head.group(1)}", {})
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        if m := _FIELD.match(line):
            current[m.group(4)] = [m.group(3), "r" if m.group(1) == "repeated" else "o", m.group(2)]
        elif m := _MAP.match(line):
            current[m.group(4)] = [m.group(3), "m", f"{m.group(1)},{m.group(2)}"]
    return package.group(1), messages


def omitted_zeros(directory: Path, package: str) -> dict[str, set[str]]:
    """Per message, the numbers of the fields Go marshals to JSON without their zero value: values (not
    pointers) tagged omitempty. Protobuf carries them even when zero; the JSON form does not."""
    found: dict[str, set[str]] = {}
    for source in sorted(directory.glob("*.go")):
        if source.name.endswith("_test.go"):
            continue
        current: set[str] | None = None
        for line in source.read_text().splitlines():
            head = re.match(r"^type\s+(\w+)\s+struct\s*\{", line)
            if head:
                current = found.setdefault(f"{package}.{head.group(1)}", set())
            elif line.startswith("}"):
                current = None
            elif current is not None and (m := _GO_FIELD.match(line)):
                go_type, tag, number = m.groups()
                if "omitempty" in tag.split(",")[1:] and not go_type.startswith(("*", "[]", "map[")):
                    current.add(number)
    return found


def qualify(package: str, name: str) -> str:
    if name.startswith("."):
        return name[1:]
    if name[0].isupper():
        return f"{package}.{name}"
    return name  # a scalar


def main() -> None:
    api, machinery = Path(sys.argv[1]), Path(sys.argv[2])
    files = [api / g / "generated.proto" for g in API_GROUPS] + [
        machinery / m / "generated.proto" for m in MACHINERY
    ]
    table: dict[str, dict[str, list[str]]] = {}
    zeros: dict[str, set[str]] = {}
    for path in files:
        package, messages = parse(path.read_text())
        zeros.update(omitted_zeros(path.parent, package))
        for name, fields in messages.items():
            for field in fields.values():
                if field[1] == "m":
                    key, value = field[2].split(",")
                    field[2] = f"{key},{qualify(package, value)}"
                else:
                    field[2] = qualify(package, field[2])
            table[name] = fields
    versions = (Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema").glob("v*-local")
    schemas = max(versions, key=lambda p: tuple(int(x) for x in p.name[1:].split("-")[0].split(".")))
    definitions = json.loads((schemas / "_definitions.json").read_text())["$defs"]
    roots = [
        n for n, f in table.items() if any(x[0] == "metadata" for x in f.values()) and not n.endswith("List")
    ]
    wanted: set[str] = set()
    todo = roots + EXTRA_ROOTS
    while todo:
        name = todo.pop()
        if name in wanted or name not in table:
            continue
        wanted.add(name)
        for field in table[name].values():
            todo.append(field[2].split(",")[-1])
    out: dict[str, dict[str, list[str]]] = {}
    for name in sorted(wanted):
        properties = definitions.get("io.k8s." + name.removeprefix("k8s.io."), {}).get("properties")
        fields = {}
        for number, field in sorted(table[name].items(), key=lambda kv: int(kv[0])):
            embedded = [f[0] for f in table.get(field[2], {}).values()]
            flags = ""
            if properties is not None and field[0] not in properties and set(embedded) & set(properties):
                flags += "i"  # embedded inline in the JSON form
            if number in zeros.get(name, set()):
                flags += "z"  # its zero value is left out of the JSON form
            fields[number] = [*field, flags] if flags else field
        out[name] = fields
    json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
