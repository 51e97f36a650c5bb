"""PHP (Slim) services, written through the shared scaffold (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, snake, words
from orchestrator.interface.codebase.parts import (
    Named,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class Php(Syntax):
    paths = {
        "main": "public/index.php",
        "core": "app/{core_pascal}.php",
        "config": "app/settings.php",
        "endpoint": "app/routes/{snake}.php",
        "client": "app/clients/{pascal}.php",
        "store": "app/clients/{pascal}.php",
        "job": "app/{snake}.php",
    }

    def depth_of(self, role: str) -> int:
        return 1 if role in ("core", "client", "store") else 0

    def header(self, role: str, subject: str) -> list[str]:
        uses = [
            "Psr\\Http\\Message\\ResponseInterface as Response",
            "Psr\\Http\\Message\\ServerRequestInterface as Request",
        ]
        if role == "main":
            uses.append("Slim\\Factory\\AppFactory")
        return ["<?php", "", "declare(strict_types=1);", "", *[f"use {u};" for u in uses], ""]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [f"class {name}", "{"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["public function __construct(array $settings)", "{"], ["}"]
        return [f"function {name}({params}): {ret}", "{"], ["}"]

    def typed(self, path: str, role: str, subject: str, type_name: str, members: list[Member]) -> Module:
        module = super().typed(path, role, subject, type_name, members)
        if module.depth:
            for member in module.members:
                member.head[0] = (
                    member.head[0]
                    .replace("function ", "public function ", 1)
                    .replace("public public", "public")
                )
        return module

    def handler(self, named: Named) -> tuple[str, str, str]:
        return camel(["handle", *named.verb_words]), "Request $request, Response $response", "Response"

    def dep_ref(self, dep: Dependency) -> str:
        return f"$this->{camel(self.dep_words(dep))}"

    def request_args(self, op: Op) -> str:
        return "$request->getParsedBody()"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"${var} = {target}->{method}({args});"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}{target}->{method}({args});",
            "} catch (\\Throwable $e) {",
            f"{self.pad}error_log('{what} failed: ' . $e->getMessage());",
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f"error_log('{message}')"

    def env(self, setting: Setting) -> str:
        default = quote(setting.default or "").replace('"', "'")
        return f"getenv('{setting.env}') ?: {default}"

    def respond(self, named: Named) -> list[str]:
        return [
            "$response->getBody()->write(json_encode(['status' => 'ok']));",
            "return $response->withHeader('Content-Type', 'application/json');",
        ]

    def core_constructor(self, type_name: str) -> list[Member]:
        return [
            Member(
                "__construct",
                ["public function __construct(array $settings)", "{"],
                [["$this->settings = $settings;"]],
                ["}"],
                rank=0,
            )
        ]

    def config_module(self) -> Module:
        lines = [f"{self.pad}'{snake(words(s.env))}' => {self.env(s)}," for s in self.facts.settings]
        return Module(
            "app/settings.php",
            "config",
            head=["<?php", "", "declare(strict_types=1);", "", "return [", *lines, "];"],
        )

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        body = [
            [
                "$settings = require __DIR__ . '/../app/settings.php';",
                "$app = AppFactory::create();",
                "$app->addBodyParsingMiddleware();",
            ],
            routes or ["$app->get('/healthz', fn ($req, $res) => $res);"],
            ["$app->run();"],
        ]
        return Member("main", ["function main(): void", "{"], body, ["}"], topic=("main",), rank=0)

    def route(self, named: Named) -> str:
        op = named.endpoint.op
        return f"$app->{op.verb.lower()}('{op.subject}', '{camel(['handle', *named.verb_words])}');"

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            if module.role == "main":
                module.head[3:3] = ["require __DIR__ . '/../vendor/autoload.php';", ""]
                module.tail = ["", "main();"]

    def build(self) -> tuple[str, list[str]]:
        return "composer.json", [
            "{",
            f'    "name": "app/{snake(self.names.stem)}",',
            '    "require": {',
            '        "php": ">=8.3",',
            '        "slim/psr7": "^1.7",',
            '        "slim/slim": "^4.14"',
            "    },",
            '    "autoload": {',
            '        "files": ["app/settings.php"]',
            "    }",
            "}",
        ]

    def image(self) -> list[str]:
        return [
            "FROM composer:2 AS vendor",
            "WORKDIR /app",
            "COPY composer.json .",
            "RUN composer install --no-dev",
            "",
            "FROM php:8.3-cli-alpine",
            "WORKDIR /var/www",
            "COPY --from=vendor /app/vendor ./vendor",
            "COPY . .",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["php", "-S", "0.0.0.0:{self.facts.port or 8080}", "-t", "public"]',
        ]


def php_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Php(facts, unit))
