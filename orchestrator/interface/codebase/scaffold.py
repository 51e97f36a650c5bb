"""The module set every application service gets, written through a language's ``Syntax``.

A service gets a main module, configuration loading, a core module (the service type holding its
dependencies, with one method per gRPC method or per endpoint), a module per endpoint, per dependency and
per background job, a build file and a Dockerfile. Where two roles share a path (Python's server is its
main module), their members share the module.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.interface.codebase.facts import Dependency, Facts, Job, Op, Setting, Step
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, kebab, pascal, singular, snake, stem, unique, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    dependency_words,
    named_endpoints,
    op_words,
    port_setting,
    result_name,
)


@dataclass(frozen=True)
class Names:
    """The words a service's files and types are named by."""

    stem: list[str]
    core: list[str]  # the gRPC interface, else the stem and 'service'
    package: str  # the gRPC package ('' when it serves none)

    def fields(self, parts: list[str], **more: str) -> dict[str, str]:
        return {
            "snake": snake(parts),
            "kebab": kebab(parts),
            "pascal": pascal(parts),
            "camel": camel(parts),
            "flat": "".join(parts),
            "stem_snake": snake(self.stem),
            "stem_pascal": pascal(self.stem),
            "stem_flat": "".join(self.stem),
            "core_snake": snake(self.core),
            "core_pascal": pascal(self.core),
            **more,
        }


def names_of(facts: Facts) -> Names:
    package, interface = facts.interface
    core = words(interface) if interface else [*stem(facts.name), "service"]
    return Names(stem(facts.name), core, package)


def job_names(facts: Facts) -> list[tuple[Job, list[str]]]:
    """Each job with its name's words: 'consumes orders' -> consumer; unique within the service."""
    found: list[tuple[Job, list[str]]] = []
    taken: dict[str, object] = {}
    own = set(words(facts.name))
    for job in facts.jobs:
        parts = [w for w in words(job.name) if w not in own] or ["worker"]
        verb = parts[0]
        agent = [verb[:-1] + ("r" if verb[:-1].endswith("e") else "er")] if verb.endswith("s") else [verb]
        chosen = agent if snake(agent) not in taken else [*parts[1:], *agent]
        name = unique(snake(chosen), taken)
        taken[name] = job
        found.append((job, name.split("_")))
    return found


class Syntax:
    """How one language writes the pieces; the defaults are a Java-like language with classes and braces."""

    ext = ".java"
    paths: dict[str, str] = {}
    logic_in = "endpoint"  # where an endpoint's calls are made: its own module, or the core module
    main_last = False  # the entry point follows the other members of its module
    depth = 1  # indent levels of members (1: inside a type)
    end = ";"

    def __init__(self, facts: Facts, unit: int) -> None:
        self.facts = facts
        self.unit = unit
        self.pad = " " * unit
        self.names = names_of(facts)

    # names
    def method(self, parts: list[str]) -> str:
        return camel(parts)

    def type_name(self, parts: list[str]) -> str:
        return pascal(parts)

    def rpc_name(self, op: Op) -> str:
        return self.method(words(op.verb))

    def kind_word(self, dep: Dependency) -> str:
        return {"datastore": "store", "queue": "queue"}.get(dep.kind.value, "client")

    def dep_words(self, dep: Dependency) -> list[str]:
        return [*dependency_words(dep), self.kind_word(dep)]

    def dep_ref(self, dep: Dependency) -> str:
        return f"this.{camel(self.dep_words(dep))}"

    @property
    def package_path(self) -> str:
        return self.names.package.replace(".", "/")

    def path(self, role: str, parts: list[str], **more: str) -> str:
        return self.paths[role].format(**self.names.fields(parts, package=self.package_path, **more))

    def endpoint_path(self, named: Named) -> str:
        return self.path("endpoint", named.words)

    def dep_path(self, dep: Dependency) -> str:
        role = "client" if self.kind_word(dep) == "client" else "store"
        return self.path(role, self.dep_words(dep))

    # module parts
    def header(self, role: str, subject: str) -> list[str]:
        return []

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [f"public class {name} {{"]

    def close_type(self) -> list[str]:
        return ["}"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        return [f"public {ret} {name}({params}) {{".replace("public  ", "public ")], ["}"]

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"var {var} = {target}.{method}({args}){self.end}"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}{target}.{method}({args}){self.end}",
            "} catch (Exception e) {",
            f"{self.pad}{self.log('warn', what + ' failed: ', 'e')}{self.end}",
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f'logger.{level}("{message}"' + (f" + {value})" if value else ")")

    def ret(self, expr: str) -> str:
        return f"return {expr}{self.end}"

    def env(self, setting: Setting) -> str:
        if setting.default is None:
            return f'requireEnv("{setting.env}")'
        return f'envOr("{setting.env}", {quote(setting.default)})'

    # role contents
    def handler(self, named: Named) -> tuple[str, str, str]:
        """(name, params, return type) of an endpoint's handler."""
        return self.method(["handle", *named.verb_words]), "Request request", "Response"

    def main_type(self) -> str:
        return self.core_type()

    def core_type(self) -> str:
        return self.type_name(self.names.core)

    def core_constructor(self, type_name: str) -> list[Member]:
        head, tail = self.function(type_name, "Config config", "")
        body = [
            [f"{self.dep_ref(d)} = new {self.type_name(self.dep_words(d))}(config){self.end}"]
            for d in self.facts.dependencies
        ]
        return [
            Member(
                "constructor", head, body, tail, topic=tuple(d.name for d in self.facts.dependencies), rank=0
            )
        ]

    def rpc_params(self, named: Named) -> str:
        return self.handler(named)[1]

    def endpoint_type(self, parts: list[str]) -> str:
        return self.type_name([*parts, "handler"])

    def endpoint_function(self, named: Named) -> tuple[list[str], list[str]]:
        return self.function(*self.handler(named))

    def request_args(self, op: Op) -> str:
        return "request"

    def enter(self, named: Named) -> list[list[str]]:
        return [[self.log("debug", f"{named.endpoint.op.text} received") + self.end]]

    def respond(self, named: Named) -> list[str]:
        return [self.ret("Response.ok()")]

    def delegate(self, named: Named) -> list[str]:
        name = self.handler(named)[0]
        return [
            self.ret(
                f"{self.type_name([*named.words, 'handler'])}.{name}({self.request_args(named.endpoint.op)})"
            )
        ]

    def core_result(self, named: Named) -> list[str]:
        return [self.ret("Response.ok()")]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        head, tail = self.function(self.method(op_words(op)), "Request request", "Response")
        return head, [[self.ret(f'transport.send("{op.text}", request, timeout)')]], tail

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return [
            [
                f'this.transport = Transport.connect(config.get("{address_setting(self.facts, dep)}"))'
                + self.end
            ]
        ]

    def config_module(self) -> Module:
        members = [
            Member(
                s.env,
                [f"public static final String {s.env} = {self.env(s)}{self.end}"],
                callable=False,
                gap=False,
            )
            for s in self.facts.settings
        ]
        return self.typed(self.path("config", []), "config", "", "Config", members)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        head, tail = self.function("main", "String[] args", "static void")
        body = [[f"var service = new {self.type_name(self.names.core)}(new Config()){self.end}"]]
        body += [routes] if routes else []
        body += [jobs] if jobs else []
        body += [[self.log("info", "started") + self.end]]
        return Member("main", head, body, tail, topic=("main", "start"), rank=0)

    def route(self, named: Named) -> str:
        op = named.endpoint.op
        return f'server.route("{op.verb}", "{op.subject}", service::{self.handler(named)[0]}){self.end}'

    def start_job(self, parts: list[str]) -> str:
        return (
            f"scheduler.start(new {self.type_name(parts)}(service)::{self.method(['run', *parts])}){self.end}"
        )

    def job_body(self, job: Job, calls: list[list[str]]) -> list[list[str]]:
        return calls

    def job_loop(self, parts: list[str]) -> Member | None:
        """The member that runs a job's iteration over and over, when the language needs one written."""
        return None

    def build(self) -> tuple[str, list[str]]:
        return "build.txt", []

    def image(self) -> list[str]:
        return []

    def extras(self) -> list[Module]:
        return []

    def depth_of(self, role: str) -> int:
        return self.depth

    def typed(self, path: str, role: str, subject: str, type_name: str, members: list[Member]) -> Module:
        depth = self.depth_of(role)
        head = self.header(role, subject) + (self.open_type(type_name, role, subject) if depth else [])
        tail = self.close_type() if depth else []
        return Module(path, role, subject, head, members, tail, depth, self.unit)

    def finish(self, modules: list[Module]) -> None:
        """Last touches once every module has its members (e.g. Python's entry point goes last)."""

    @property
    def port_env(self) -> str:
        return port_setting(self.facts) or "PORT"


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def table_words(dep: Dependency) -> list[str]:
    """The singular words of the first table, topic or key a dependency's operations name."""
    subject = next((op.subject for op in dep.ops if op.subject), dep.name)
    return [singular(w) for w in words(subject.rsplit(".", 1)[-1])] or words(dep.name)


def scaffold(syn: Syntax) -> list[Module]:
    """The modules of an application service, written in ``syn`` (no side effects)."""
    facts = syn.facts
    named = named_endpoints(facts)
    jobs = job_names(facts)
    routes = [syn.route(n) for n in named] if facts.protocol == "http" else []
    main = syn.main_member(routes, [syn.start_job(parts) for _, parts in jobs])
    written = [syn.typed(syn.path("main", []), "main", "", syn.main_type(), [main]), syn.config_module()]
    written.append(syn.typed(syn.path("core", []), "core", "", syn.core_type(), _core_members(syn, named)))
    written += [_endpoint(syn, item) for item in named]
    written += [_dependency(syn, dep) for dep in facts.dependencies]
    written += [_job(syn, job, parts) for job, parts in jobs]
    build_path, build_lines = syn.build()
    written += [
        Module(build_path, "build", head=build_lines),
        Module("Dockerfile", "image", head=syn.image()),
    ]
    modules: dict[str, Module] = {}
    for module in [*written, *syn.extras()]:
        existing = modules.setdefault(module.path, module)
        if existing is not module:
            existing.members += module.members
            existing.merged += [s for s in (module.subject, *module.merged) if s]
    if syn.main_last:
        module = modules[syn.path("main", [])]
        module.members = [m for m in module.members if m is not main] + [main]
    syn.finish(list(modules.values()))
    return list(modules.values())


def _core_members(syn: Syntax, named: list[Named]) -> list[Member]:
    """The core type's constructor, and a method per endpoint (its logic) or per gRPC method (delegating)."""
    members = syn.core_constructor(syn.core_type())
    for item in named:
        _, params, ret = syn.handler(item)
        topic = tuple(item.verb_words)
        if syn.logic_in == "core":
            name = syn.method(op_words(item.endpoint.op))
            head, tail = syn.function(name, params, ret)
            body = _calls(syn, item.endpoint.steps) + [syn.core_result(item)]
            members.append(Member(name, head, body, tail, topic=topic, rank=2))
        elif syn.facts.protocol == "grpc":
            name = syn.rpc_name(item.endpoint.op)
            head, tail = syn.function(name, syn.rpc_params(item), ret)
            members.append(Member(name, head, [syn.delegate(item)], tail, topic=topic, rank=2))
    return members


def _endpoint(syn: Syntax, item: Named) -> Module:
    head, tail = syn.endpoint_function(item)
    calls = [] if syn.logic_in == "core" else _calls(syn, item.endpoint.steps)
    body = [*syn.enter(item), *calls, syn.respond(item)]
    member = Member(syn.handler(item)[0], head, body, tail, topic=tuple(item.verb_words), rank=2)
    type_name = syn.endpoint_type(item.words)
    return syn.typed(syn.endpoint_path(item), "endpoint", item.endpoint.op.text, type_name, [member])


def _dependency(syn: Syntax, dep: Dependency) -> Module:
    type_name = syn.type_name(syn.dep_words(dep))
    ctor, ctor_tail = syn.function(type_name, "Config config", "")
    setup = syn.client_setup(dep)
    members = [Member("constructor", ctor, setup, ctor_tail, topic=(dep.name,), rank=0)] if setup else []
    for op in dep.ops:
        head, body, tail = syn.client_op(dep, op)
        members.append(Member(syn.method(op_words(op)), head, body, tail, topic=tuple(op_words(op))))
    role = "client" if syn.kind_word(dep) == "client" else "store"
    return syn.typed(syn.dep_path(dep), role, dep.name, type_name, members)


def _job(syn: Syntax, job: Job, parts: list[str]) -> Module:
    name = syn.method(["run", *parts])
    head, tail = syn.function(name, "", "void")
    body = syn.job_body(job, _calls(syn, job.steps))
    member = Member(name, head, body, tail, topic=tuple(words(job.name)), rank=2)
    loop = syn.job_loop(parts)
    members = [member] if loop is None else [loop, member]
    return syn.typed(syn.path("job", parts), "job", job.name, syn.type_name(parts), members)


def _calls(syn: Syntax, steps: tuple[Step, ...]) -> list[list[str]]:
    taken: set[str] = {"request", "response", "config", "context", "req", "res"}
    body: list[list[str]] = []
    for step in steps:
        dep = syn.facts.dependency(step.callee)
        target, method = syn.dep_ref(dep), syn.method(op_words(step.op))
        what = " ".join(op_words(step.op))
        args = syn.request_args(step.op)
        if step.critical:
            body.append(syn.call(result_name(step.op, taken), target, method, args, what))
        else:
            body.append(syn.soft_call(target, method, args, what))
    return body
