"""Names every language's generator shares: of endpoints, dependency operations, results and jobs (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.interface.codebase.facts import Dependency, Endpoint, Facts, Op, Step
from orchestrator.interface.codebase.names import camel, stem, without_verb, words

_RESERVED = {
    "type",
    "func",
    "range",
    "map",
    "select",
    "case",
    "default",
    "package",
    "var",
    "const",
    "go",
    "class",
    "new",
    "import",
    "return",
    "from",
    "def",
    "end",
    "index",
    "delete",
    "in",
    "is",
}


@dataclass(frozen=True)
class Named:
    """An endpoint with the words its module and handler are named by."""

    endpoint: Endpoint
    words: list[str]  # unique among the service's endpoints
    verb_words: list[str]  # the handler's words: the operation with its verb


def op_words(op: Op) -> list[str]:
    """Words for a method that performs ``op``: GetQuote -> get, quote; SELECT orders -> select, orders."""
    if op.protocol == "grpc":
        return words(op.verb)
    if op.protocol == "http":
        return [op.verb.lower(), *op.resource()]
    if op.protocol == "redis":
        return words(op.verb)
    return [*words(op.verb), *op.resource()]


def result_name(op: Op, taken: set[str]) -> str:
    """A local variable name for what ``op`` returns, unique against ``taken`` (which it extends)."""
    if op.protocol == "redis":
        base = ["value"]
    elif op.protocol == "sql":
        base = ["rows"] if op.verb == "SELECT" else ["affected"]
    elif op.protocol in ("queue", "registry"):
        base = ["sent"] if op.verb != "consume" else ["records"]
    else:
        base = without_verb(op_words(op)[1:] if op.protocol == "http" else op_words(op)) or ["result"]
    name = camel(base[-2:])
    if name in _RESERVED:
        name += "Result"
    candidate, index = name, 2
    while candidate in taken:
        candidate, index = f"{name}{index}", index + 1
    taken.add(candidate)
    return candidate


def dependency_words(dep: Dependency) -> list[str]:
    """What a dependency is called in code: its gRPC interface without 'Service', else its name's stem."""
    if dep.protocol == "grpc":
        interface = words(dep.ops[0].interface)
        trimmed = interface[:-1] if len(interface) > 1 and interface[-1] == "service" else interface
        if trimmed and trimmed != ["service"]:
            return trimmed
    return stem(dep.name) if dep.kind.value in ("service", "gateway") else words(dep.name)


def named_endpoints(facts: Facts) -> list[Named]:
    """The service's endpoints with unique words: a second route on the same path gets its method's word."""
    found: list[Named] = []
    taken: set[str] = set()
    for endpoint in facts.endpoints:
        op = endpoint.op
        base = without_verb(words(op.verb)) if op.protocol == "grpc" else op.resource()
        chosen = base
        if "_".join(chosen) in taken:
            chosen = [op.verb.lower(), *base]
        while "_".join(chosen) in taken:
            chosen = [*chosen, str(len(found))]
        taken.add("_".join(chosen))
        found.append(Named(endpoint, chosen, op_words(op)))
    return found


def port_setting(facts: Facts) -> str | None:
    """The env var that holds the service's listening port, when its manifest sets one."""
    ports = [s.env for s in facts.settings if s.env.endswith("PORT")]
    exact = [s.env for s in facts.settings if s.env.endswith("PORT") and s.default == str(facts.port)]
    return (exact + ports)[0] if ports else None


def address_setting(facts: Facts, dep: Dependency) -> str:
    """The env var that holds a dependency's address (its conventional name when the manifest has none)."""
    return dep.env or "_".join(w.upper() for w in [*words(dep.name), "addr"])


def steps_of(facts: Facts) -> list[Step]:
    return [step for e in facts.endpoints for step in e.steps] + [
        step for j in facts.jobs for step in j.steps
    ]


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
