"""Next.js (TypeScript) front ends: pages and API routes per route, gateways per dependency (pure)."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Dependency, Facts, Op
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, words
from orchestrator.interface.codebase.node import Node
from orchestrator.interface.codebase.parts import (
    Named,
    dependency_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class NextJs(Node):
    paths = {
        "main": "server.ts",
        "core": "services/{core_pascal}.ts",
        "config": "utils/config.ts",
        "client": "gateways/{pascal}.gateway.ts",
        "store": "gateways/{pascal}.gateway.ts",
        "job": "utils/{kebab}.ts",
    }
    main_last = False

    def dep_words(self, dep: Dependency) -> list[str]:
        return [*dependency_words(dep), "gateway"]

    def dep_ref(self, dep: Dependency) -> str:
        return pascal(self.dep_words(dep))

    def dep_path(self, dep: Dependency) -> str:
        kind = "rpc" if dep.protocol == "grpc" else "http"
        return f"gateways/{kind}/{pascal(dependency_words(dep))}.gateway.ts"

    def endpoint_path(self, named: Named) -> str:
        path = re.sub(r"\{(\w+)\}", r"[\1]", named.endpoint.op.subject).strip("/")
        if not path.startswith("api/"):
            return f"pages/{path or 'index'}.tsx"
        return f"pages/{path}.ts"

    def depth_of(self, role: str) -> int:
        return 1 if role in ("client", "store", "core") else 0

    def header(self, role: str, subject: str) -> list[str]:
        if role == "config":
            return []
        imports = (
            [
                "import type { NextApiRequest, NextApiResponse } from 'next';",
                "import logger from '@/utils/logger';",
            ]
            if role == "endpoint"
            else []
        )
        imports += [
            f"import {self.dep_ref(d)} from '@/{self.dep_path(d).removesuffix('.ts')}';"
            for d in self._callees(role, subject)
        ]
        return [*imports, *([""] if imports else [])]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [f"{'export default ' if role != 'core' else 'export '}class {name} {{"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["constructor(private readonly config: Config) {"], ["}"]
        return [f"export async function {name}({params}) {{"], ["}"]

    def typed(self, path: str, role: str, subject: str, type_name: str, members: list[Member]) -> Module:
        module = Syntax.typed(self, path, role, subject, type_name, members)
        if module.depth:
            for member in module.members:
                member.head[0] = member.head[0].replace("export async function ", "static async ")
        return module

    def handler(self, named: Named) -> tuple[str, str, str]:
        return (
            "handle" + pascal([named.endpoint.op.verb.lower()]),
            "req: NextApiRequest, res: NextApiResponse",
            "void",
        )

    def request_args(self, op: Op) -> str:
        return "req.body"

    def respond(self, named: Named) -> list[str]:
        return ["return res.status(200).json({});"]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        head, body, tail = super().client_op(dep, op)
        return (
            [head[0].replace("(request)", "(request: unknown)")],
            [[line.replace("this.", f"{self.dep_ref(dep)}.") for line in statement] for statement in body],
            tail,
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return []

    def config_module(self) -> Module:
        lines = [
            f"{self.pad}{camel(words(s.env))}: process.env.{s.env}"
            + (f" ?? {quote(s.default)}," if s.default is not None else "!,")
            for s in self.facts.settings
        ]
        return Module(
            "utils/config.ts",
            "config",
            head=[
                "const config = {",
                *lines,
                "} as const;",
                "",
                "export type Config = typeof config;",
                "export default config;",
            ],
            unit=self.unit,
        )

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        body = [
            ["const app = next({ dev: false });", "const handle = app.getRequestHandler();"],
            ["await app.prepare();"],
            [
                "createServer((req, res) => handle(req, "
                f"res)).listen(Number(config.{camel(words(self.port_env))}), () => {{",
                f"{self.pad}console.log(`listening on ${{config.{camel(words(self.port_env))}}}`);",
                "});",
            ],
        ]
        return Member("main", ["async function main() {"], body, ["}"], topic=("main",), rank=0)

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            if module.role == "main":
                module.head = [
                    "import { createServer } from 'http';",
                    "import next from 'next';",
                    "import config from './utils/config';",
                    "",
                ]
                module.tail = ["", "main();"]
            if module.role == "endpoint" and module.path.endswith(".ts"):
                cases = [
                    line
                    for m in module.members
                    for line in (
                        f"{self.pad}case '{m.name[6:].upper()}':",
                        f"{self.pad * 2}return {m.name}(req, res);",
                    )
                ]
                module.members.append(
                    Member(
                        "handler",
                        [
                            "export default async function handler(req: "
                            "NextApiRequest, res: NextApiResponse) {"
                        ],
                        [
                            [
                                "switch (req.method) {",
                                *cases,
                                f"{self.pad}default:",
                                f"{self.pad * 2}return res.status(405).end();",
                                "}",
                            ]
                        ],
                        ["}"],
                        rank=0,
                    )
                )
            if module.role == "endpoint" and module.path.endswith(".tsx"):
                for member in module.members:
                    member.head = [
                        "export async function getServerSideProps({ req, res }: GetServerSidePropsContext) {"
                    ]
                    member.body[-1] = ["return { props: {} };"]
                module.head = ["import type { GetServerSidePropsContext } from 'next';", *module.head[1:]]
                module.members.append(
                    Member(
                        "Home",
                        ["export default function Home() {"],
                        [['return <main className="home" />;']],
                        ["}"],
                        callable=False,
                    )
                )

    def build(self) -> tuple[str, list[str]]:
        return "package.json", [
            "{",
            f'  "name": "{self.facts.name}",',
            '  "private": true,',
            '  "scripts": {',
            '    "build": "next build",',
            '    "start": "node dist/server.js"',
            "  },",
            '  "dependencies": {',
            '    "next": "14.2.4",',
            '    "react": "18.3.1",',
            '    "react-dom": "18.3.1"',
            "  }",
            "}",
        ]

    def image(self) -> list[str]:
        return [
            "FROM node:20-alpine AS builder",
            "WORKDIR /app",
            "COPY . .",
            "RUN npm ci && npm run build",
            "",
            "FROM node:20-alpine",
            "WORKDIR /app",
            "COPY --from=builder /app .",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            'ENTRYPOINT ["npm", "start"]',
        ]


def nextjs_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(NextJs(facts, unit))
