"""Python services, and the message templates of services that send mail (pure)."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module, label
from orchestrator.interface.codebase.names import pascal, snake, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    named_endpoints,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class Python(Syntax):
    paths = {
        "main": "{stem_snake}_server.py",
        "core": "{stem_snake}_server.py",
        "config": "config.py",
        "endpoint": "{snake}.py",
        "client": "{snake}.py",
        "store": "{snake}.py",
        "job": "{snake}.py",
    }
    depth = 0
    end = ""
    main_last = True

    def method(self, parts: list[str]) -> str:
        return snake(parts)

    def rpc_name(self, op: Op) -> str:
        return op.verb

    def dep_ref(self, dep: Dependency) -> str:
        return f"service.{snake(self.dep_words(dep))}"

    stubs = "demo"  # the generated gRPC modules: demo_pb2, demo_pb2_grpc

    def header(self, role: str, subject: str) -> list[str]:
        lines = ["import logging", "import os"]
        if role in ("main", "core"):
            lines += [
                "import threading",
                "from concurrent import futures",
                "",
                "import grpc",
                "from flask import Flask, request",
                "",
                f"import {self.stubs}_pb2",
                f"import {self.stubs}_pb2_grpc",
                "from config import Config",
            ]
            lines += [
                f"from {snake(n.words)} import handle_{snake(n.verb_words)}"
                for n in named_endpoints(self.facts)
            ]
        elif role == "client":
            lines += ["", "import grpc", "import requests", "", f"import {self.stubs}_pb2_grpc"]
        elif role == "endpoint":
            lines += ["", f"import {self.stubs}_pb2"]
        elif role == "job":
            lines += ["import time"]
        return [*lines, "", "logger = logging.getLogger(__name__)", ""]

    def typed(self, path: str, role: str, subject: str, type_name: str, members: list[Member]) -> Module:
        if role in ("core", "client", "store"):
            base = (
                f"({self.stubs}_pb2_grpc.{self.facts.interface[1]}Servicer)"
                if role == "core" and self.facts.interface[1]
                else ""
            )
            for member in members:
                member.depth = 1
                member.head[0] = member.head[0].replace("(", "(self, ", 1).replace("(self, )", "(self)")
            members = [Member(type_name, [f"class {type_name}{base}:"], callable=False), *members]
            for member in members[1:2]:
                member.gap = False
        return Module(path, role, subject, self.header(role, subject), members, [], 0, self.unit, top_gap=2)

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["def __init__(config):"], []
        return [f"def {name}({params}):"], []

    def rpc_params(self, named: Named) -> str:
        return "request, context"

    def handler(self, named: Named) -> tuple[str, str, str]:
        return f"handle_{snake(named.verb_words)}", "service, request", "Response"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"{snake(words(var))} = {target}.{method}({args})"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try:",
            f"{self.pad}{target}.{method}({args})",
            "except Exception as err:",
            f'{self.pad}logger.warning("{what} failed: %s", err)',
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f'logger.{ {"warn": "warning"}.get(level, level) }("{message}")'.replace("{ ", "{").replace(
            " }", "}"
        )

    def ret(self, expr: str) -> str:
        return f"return {expr}"

    def env(self, setting: Setting) -> str:
        if setting.default is None:
            return f'os.environ["{setting.env}"]'
        return f'os.environ.get("{setting.env}", {quote(setting.default)})'

    def enter(self, named: Named) -> list[list[str]]:
        return [[f'logger.info("{named.endpoint.op.text}")']]

    def respond(self, named: Named) -> list[str]:
        op = named.endpoint.op
        return [
            f"return {self.stubs}_pb2.{op.verb}Response()"
            if op.protocol == "grpc"
            else 'return {"status": "ok"}'
        ]

    def delegate(self, named: Named) -> list[str]:
        return [f"return handle_{snake(named.verb_words)}(self, request)"]

    def core_constructor(self, type_name: str) -> list[Member]:
        body = [
            [
                f"self.{snake(self.dep_words(d))} = {pascal(self.dep_words(d))}(config)"
                for d in self.facts.dependencies
            ]
            + ["self.config = config"]
        ]
        return [Member("__init__", ["def __init__(config):"], body, [], rank=0)]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        head = [f"def {snake(op_words(op))}(request):"]
        if op.protocol == "grpc":
            return head, [[f"return self._stub.{op.verb}(request, timeout=self._timeout)"]], []
        if op.protocol == "http":
            path = re.sub(r"\{(\w+)\}", r"{request[\1]}", op.subject)
            return (
                head,
                [
                    [
                        f'response = self._session.{op.verb.lower()}(f"{{self._base_url}}{path}", '
                        "json=request,",
                        f"{self.pad * 2}timeout=self._timeout)",
                    ],
                    ["response.raise_for_status()"],
                    ["return response.json()"],
                ],
                [],
            )
        return (
            head,
            [
                [
                    "with self._pool.connection() as conn:",
                    f'{self.pad}return conn.execute("{op.text}", request).fetchall()',
                ]
            ],
            [],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        env = snake(words(address_setting(self.facts, dep)))
        if dep.protocol == "grpc":
            return [
                [
                    f"channel = grpc.insecure_channel(config.{env})",
                    f"self._stub = {self.stubs}_pb2_grpc.{dep.ops[0].interface}Stub(channel)",
                    "self._timeout = 5",
                ]
            ]
        if dep.protocol == "http":
            return [
                [
                    "self._session = requests.Session()",
                    f'self._base_url = f"http://{{config.{env}}}"',
                    "self._timeout = 5",
                ]
            ]
        return [[f"self._pool = ConnectionPool(config.{env})"]]

    def config_module(self) -> Module:
        reads = [[f"self.{snake(words(s.env))} = {self.env(s)}" for s in self.facts.settings] or ["pass"]]
        members = [
            Member("Config", ["class Config:"], callable=False),
            Member("__init__", ["def __init__(self):"], reads, [], depth=1, gap=False, rank=0),
        ]
        return Module("config.py", "config", "", ["import os", ""], members, unit=self.unit, top_gap=2)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.core_type()
        body = [["config = Config()", f"service = {core}(config)"], *([jobs] if jobs else [])]
        port = f"config.{snake(words(self.port_env))}"
        if self.facts.protocol == "grpc":
            body.append(
                [
                    "server = grpc.server(futures.ThreadPoolExecutor(max_workers=10))",
                    f"{self.stubs}_pb2_grpc.add_{self.facts.interface[1]}Servicer_to_server(service, server)",
                    f'server.add_insecure_port(f"[::]:{{{port}}}")',
                    "server.start()",
                    f'logger.info("{self.facts.name} listening on port %s", {port})',
                    "server.wait_for_termination()",
                ]
            )
        elif self.facts.protocol == "http":
            body.append(["app = Flask(__name__)", *routes, f'app.run(host="0.0.0.0", port=int({port}))'])
        else:
            body.append(["threading.Event().wait()"])
        return Member("serve", ["def serve():"], body, [], topic=("main", "serve"), rank=0)

    def route(self, named: Named) -> str:
        op = named.endpoint.op
        path = re.sub(r"\{(\w+)\}", r"<\1>", op.subject)
        return (
            f'app.add_url_rule("{path}", "{snake(named.verb_words)}", '
            f"lambda **_: handle_{snake(named.verb_words)}(service, "
            f'request.get_json(silent=True)), methods=["{op.verb}"])'
        )

    def job_loop(self, parts: list[str]) -> Member | None:
        body = [["while True:", f"{self.pad}run_{snake(parts)}(service)", f"{self.pad}time.sleep(1)"]]
        return Member(f"loop_{snake(parts)}", [f"def loop_{snake(parts)}(service):"], body, rank=0)

    def start_job(self, parts: list[str]) -> str:
        return f"threading.Thread(target=loop_{snake(parts)}, args=(service,), daemon=True).start()"

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            if module.role == "main":
                module.tail = ["", 'if __name__ == "__main__":', f"{self.pad}serve()"]
            if module.role == "job":
                for member in module.members:
                    member.head = [member.head[0].replace("():", "(service):")]

    def extras(self) -> list[Module]:
        return templates(self, "templates/{name}.html", "{{{{ {expr} }}}}")

    def build(self) -> tuple[str, list[str]]:
        return "requirements.txt", [
            "flask==3.0.3",
            "grpcio==1.64.1",
            "grpcio-health-checking==1.64.1",
            "psycopg[pool]==3.1.19",
            "python-json-logger==2.0.7",
            "requests==2.32.3",
        ]

    def image(self) -> list[str]:
        return [
            "FROM python:3.12-slim",
            "WORKDIR /app",
            "COPY requirements.txt .",
            "RUN pip install --no-cache-dir -r requirements.txt",
            "COPY . .",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["python", "{self.path("main", [])}"]',
        ]


def templates(syn: Syntax, path: str, expression: str) -> list[Module]:
    """A message template per endpoint that sends one (``SendOrderConfirmation`` -> confirmation)."""
    found = []
    for named in named_endpoints(syn.facts):
        parts = (
            words(named.endpoint.op.verb)
            if named.endpoint.op.protocol == "grpc"
            else named.endpoint.op.resource()
        )
        if len(parts) < 2 or parts[0] != "send":
            continue
        subject, name = parts[1], parts[-1]
        exprs = [f"{subject}.{subject}_id", f"{subject}.status", f"{subject}.total.units"]
        rows = [
            [
                "<tr>",
                f"  <td>{label(expression.format(expr=e))}</td>",
                f"  <td>{expression.format(expr=e)}</td>",
                "</tr>",
            ]
            for e in exprs
        ]
        head = [
            "<!DOCTYPE html>",
            "<html>",
            "<head>",
            '  <meta charset="utf-8">',
            f"  <title>Your {subject} {name}</title>",
            "</head>",
            "<body>",
            f"  <h2>Thank you for your {subject}!</h2>",
            f"  <p>{expression.format(expr=subject + '.' + subject + '_id')} is on its way.</p>",
        ]
        table = Member(
            "table", ['<table class="summary">'], rows, ["</table>"], topic=(subject, name), gap=False
        )
        found.append(
            Module(
                path.format(name=name),
                "template",
                named.endpoint.op.text,
                head,
                [table],
                ["</body>", "</html>"],
                1,
                2,
            )
        )
    return found


def python_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Python(facts, unit))
