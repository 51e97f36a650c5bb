"""Node.js services, written through the shared scaffold (pure)."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, kebab, pascal, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    named_endpoints,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class Node(Syntax):
    paths = {
        "main": "server.js",
        "core": "server.js",
        "config": "config.js",
        "endpoint": "{kebab}.js",
        "client": "clients/{kebab}.js",
        "store": "clients/{kebab}.js",
        "job": "{kebab}.js",
    }
    main_last = True

    def depth_of(self, role: str) -> int:
        return 1 if role in ("client", "store") else 0

    def dep_ref(self, dep: Dependency) -> str:
        return camel(self.dep_words(dep))

    def _callees(self, role: str, subject: str) -> list[Dependency]:
        steps = [s for e in self.facts.endpoints if e.op.text == subject for s in e.steps]
        steps += [s for j in self.facts.jobs if j.name == subject for s in j.steps]
        return [self.facts.dependency(c) for c in dict.fromkeys(s.callee for s in steps)]

    def _module_of(self, path: str) -> str:
        return "./" + path.removesuffix(".js").removesuffix(".ts")

    def header(self, role: str, subject: str) -> list[str]:
        requires = ["const pino = require('pino');"]
        if role in ("main", "core"):
            requires = [
                "const grpc = require('@grpc/grpc-js');",
                "const protoLoader = require('@grpc/proto-loader');",
                *requires,
                "const config = require('./config');",
                *[
                    f"const {{ handle{pascal(n.verb_words)} }} = "
                    f"require('{self._module_of(self.endpoint_path(n))}');"
                    for n in named_endpoints(self.facts)
                ],
            ]
        elif role == "client":
            requires = [
                "const grpc = require('@grpc/grpc-js');",
                *requires,
                "const config = require('../config');",
            ]
        requires += [
            f"const {self.dep_ref(d)} = require('{self._module_of(self.dep_path(d))}');"
            for d in self._callees(role, subject)
        ]
        return [
            "'use strict';",
            "",
            *requires,
            "",
            f"const logger = pino({{ name: '{self.facts.name}' }});",
            "",
        ]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [f"class {name} {{"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["constructor(config) {"], ["}"]
        return [f"async function {name}({params}) {{"], ["}"]

    def typed(self, path: str, role: str, subject: str, type_name: str, members: list[Member]) -> Module:
        module = super().typed(path, role, subject, type_name, members)
        if module.depth:
            for member in module.members:
                member.head[0] = member.head[0].replace("async function ", "async ")
        return module

    def handler(self, named: Named) -> tuple[str, str, str]:
        return "handle" + pascal(named.verb_words), "request", "Promise"

    def rpc_params(self, named: Named) -> str:
        return "call, callback"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"const {var} = await {target}.{method}({args});"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}await {target}.{method}({args});",
            "} catch (err) {",
            f"{self.pad}logger.warn({{ err }}, '{what} failed');",
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f"logger.{level}('{message}')"

    def env(self, setting: Setting) -> str:
        if setting.default is None:
            return f"required('{setting.env}')"
        return f"process.env.{setting.env} || {quote(setting.default)}".replace('"', "'")

    def delegate(self, named: Named) -> list[str]:
        name = self.rpc_name(named.endpoint.op)
        return [
            "try {",
            f"{self.pad}const response = await handle{pascal(named.verb_words)}(call.request);",
            f"{self.pad}callback(null, response);",
            "} catch (err) {",
            f"{self.pad}logger.error({{ err }}, '{name} failed');",
            f"{self.pad}callback(err);",
            "}",
        ]

    def respond(self, named: Named) -> list[str]:
        return ["return {};"]

    def core_constructor(self, type_name: str) -> list[Member]:
        return []

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = camel(op_words(op))
        if op.protocol == "grpc":
            return (
                [f"async function {name}(request) {{"],
                [
                    ["const deadline = Date.now() + this.timeoutMs;"],
                    [
                        "return new Promise((resolve, reject) => {",
                        f"{self.pad}this.stub.{camel(words(op.verb))}(request, {{ deadline }}, "
                        "(err, response) => (err ? reject(err) : resolve(response)));",
                        "});",
                    ],
                ],
                ["}"],
            )
        verb = op.verb if op.protocol == "http" else "POST"
        path = op.subject if op.protocol == "http" else "/" + kebab(op_words(op))
        return (
            [f"async function {name}(request) {{"],
            [
                [
                    f"const response = await fetch(`${{this.baseUrl}}{path}`, {{",
                    f"{self.pad}method: '{verb}',",
                    f"{self.pad}headers: {{ 'content-type': 'application/json' }},",
                    f"{self.pad}body: JSON.stringify(request),",
                    f"{self.pad}signal: AbortSignal.timeout(this.timeoutMs),",
                    "});",
                ],
                ["return response.json();"],
            ],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return [
            [
                f"this.baseUrl = `http://${{config.{address_setting(self.facts, dep)}}}`;",
                "this.timeoutMs = 5000;",
            ]
        ]

    def config_module(self) -> Module:
        lines = [f"{self.pad}{s.env}: {self.env(s)}," for s in self.facts.settings]
        head = [
            "'use strict';",
            "",
            "function required(name) {",
            f"{self.pad}if (!process.env[name]) {{",
            f"{self.pad * 2}throw new Error(`${{name}} is not set`);",
            f"{self.pad}}}",
            f"{self.pad}return process.env[name];",
            "}",
            "",
            "module.exports = {",
            *lines,
            "};",
        ]
        return Module(self.path("config", []), "config", head=head, unit=self.unit)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        port = f"config.{self.port_env}"
        if self.facts.protocol == "grpc":
            rpcs = ", ".join(self.rpc_name(n.endpoint.op) for n in named_endpoints(self.facts))
            serve = [
                "const server = new grpc.Server();",
                f"server.addService(proto.{self.facts.interface[1]}.service, {{ {rpcs} }});",
                f"server.bindAsync(`0.0.0.0:${{{port}}}`, "
                f"grpc.ServerCredentials.createInsecure(), (err, port) => {{",
                f"{self.pad}if (err) {{",
                f"{self.pad * 2}logger.error({{ err }}, 'bind failed');",
                f"{self.pad * 2}process.exit(1);",
                f"{self.pad}}}",
                f"{self.pad}logger.info(`listening on ${{port}}`);",
                "});",
            ]
        else:
            serve = [
                "const app = require('express')();",
                "app.use(require('express').json());",
                *routes,
                f"app.listen({port}, () => logger.info(`listening on ${{{port}}}`));",
            ]
        body = [["const proto = grpc.loadPackageDefinition(protoLoader.loadSync('proto/service.proto'));"]]
        return Member(
            "main",
            ["function main() {"],
            [*body, serve, *([jobs] if jobs else [])],
            ["}"],
            topic=("main",),
            rank=0,
        )

    def route(self, named: Named) -> str:
        op = named.endpoint.op
        path = re.sub(r"\{(\w+)\}", r":\1", op.subject)
        return (
            f"app.{op.verb.lower()}('{path}', async (req, res) => res.json(await "
            f"handle{pascal(named.verb_words)}(req.body)));"
        )

    def start_job(self, parts: list[str]) -> str:
        return (
            f"setInterval(() => run{pascal(parts)}().catch((err) => logger.warn({{ "
            f"err }}, '{' '.join(parts)} failed')), 1000);"
        )

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            exported = [
                m.name for m in module.members if m.callable and m.name not in ("main", "constructor")
            ]
            if module.role == "main":
                module.tail = ["", "main();"]
            elif module.depth and module.members:
                type_name = module.head[-1].split()[1]
                module.tail = [*module.tail, "", f"module.exports = new {type_name}(require('../config'));"]
            elif exported and module.path.endswith(".js"):
                module.tail = ["", f"module.exports = {{ {', '.join(exported)} }};"]

    def build(self) -> tuple[str, list[str]]:
        deps = ["@grpc/grpc-js", "@grpc/proto-loader", "express", "pino"]
        versions = {
            "@grpc/grpc-js": "^1.10.9",
            "@grpc/proto-loader": "^0.7.13",
            "express": "^4.19.2",
            "pino": "^9.2.0",
        }
        lines = [
            f'    "{d}": "{versions[d]}"' + ("," if i < len(deps) - 1 else "") for i, d in enumerate(deps)
        ]
        return "package.json", [
            "{",
            f'  "name": "{self.facts.name}",',
            f'  "version": "{self.facts.version.lstrip("v")}",',
            '  "main": "server.js",',
            '  "scripts": {',
            '    "start": "node server.js"',
            "  },",
            '  "dependencies": {',
            *lines,
            "  }",
            "}",
        ]

    def image(self) -> list[str]:
        return [
            "FROM node:20-alpine",
            "WORKDIR /usr/src/app",
            "COPY package*.json ./",
            "RUN npm ci --omit=dev",
            "COPY . .",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            'ENTRYPOINT ["node", "server.js"]',
        ]


def node_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Node(facts, unit))
