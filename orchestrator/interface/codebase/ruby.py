"""Ruby (Sinatra) services, written through the shared scaffold (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import pascal, snake, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    named_endpoints,
    op_words,
)
from orchestrator.interface.codebase.python import templates
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class Ruby(Syntax):
    paths = {
        "main": "{stem_snake}_server.rb",
        "core": "{stem_snake}_service.rb",
        "config": "config.rb",
        "endpoint": "{snake}.rb",
        "client": "{snake}.rb",
        "store": "{snake}.rb",
        "job": "{snake}.rb",
    }
    end = ""

    def depth_of(self, role: str) -> int:
        return 0 if role in ("main", "endpoint", "job") else 1

    def method(self, parts: list[str]) -> str:
        return snake(parts)

    def dep_ref(self, dep: Dependency) -> str:
        return f"settings.service.{snake(self.dep_words(dep))}"

    def header(self, role: str, subject: str) -> list[str]:
        requires = ["json", "logger"]
        if role == "main":
            requires = [
                "sinatra",
                "json",
                "logger",
                "./config",
                f"./{snake(self.names.core)}",
                *[f"./{snake(n.words)}" for n in named_endpoints(self.facts)],
            ]
        elif role == "client":
            requires = ["net/http", "json", "uri"]
        return [*[f'require "{name}"' for name in requires], ""]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [f"class {name}"]

    def close_type(self) -> list[str]:
        return ["end"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["def initialize(config)"], ["end"]
        return [f"def {name}({params})" if params else f"def {name}"], ["end"]

    def handler(self, named: Named) -> tuple[str, str, str]:
        return snake(named.verb_words), "data", "Hash"

    def request_args(self, op: Op) -> str:
        return "data"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"{snake(words(var))} = {target}.{method}({args})"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "begin",
            f"{self.pad}{target}.{method}({args})",
            "rescue StandardError => e",
            f'{self.pad}logger.warn("{what} failed: #{{e.message}}")',
            "end",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f'logger.{level}("{message}")'

    def ret(self, expr: str) -> str:
        return expr

    def env(self, setting: Setting) -> str:
        return (
            f'ENV.fetch("{setting.env}")'
            if setting.default is None
            else f'ENV.fetch("{setting.env}", {quote(setting.default)})'
        )

    def enter(self, named: Named) -> list[list[str]]:
        return [[f'logger.info("{named.endpoint.op.text}")']]

    def respond(self, named: Named) -> list[str]:
        return ['{ status: "ok" }']

    def core_constructor(self, type_name: str) -> list[Member]:
        body = [
            [
                f"@{snake(self.dep_words(d))} = {pascal(self.dep_words(d))}.new(config)"
                for d in self.facts.dependencies
            ]
            + ["@config = config"]
        ]
        readers = [
            f"attr_reader {', '.join(':' + snake(self.dep_words(d)) for d in self.facts.dependencies)}"
        ]
        members = [Member("readers", readers, callable=False)] if self.facts.dependencies else []
        return [*members, Member("initialize", ["def initialize(config)"], body, ["end"], rank=0)]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        verb = op.verb.capitalize() if op.protocol == "http" else "Post"
        path = op.subject if op.protocol == "http" else f"/{snake(op_words(op))}"
        return (
            [f"def {snake(op_words(op))}(data)"],
            [
                [
                    f'uri = URI("#{{@base_url}}{path}")',
                    f'request = Net::HTTP::{verb}.new(uri, "Content-Type" => "application/json")',
                    "request.body = data.to_json",
                ],
                [
                    "response = Net::HTTP.start(uri.host, uri.port, read_timeout: "
                    "@timeout) { |http| http.request(request) }",
                    "JSON.parse(response.body)",
                ],
            ],
            ["end"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return [
            [
                f'@base_url = "http://#{{config.{snake(words(address_setting(self.facts, dep)))}}}"',
                "@timeout = 5",
            ]
        ]

    def config_module(self) -> Module:
        members = (
            [
                Member(
                    "readers",
                    [f"attr_reader {', '.join(':' + snake(words(s.env)) for s in self.facts.settings)}"],
                    callable=False,
                )
            ]
            if self.facts.settings
            else []
        )
        members.append(
            Member(
                "initialize",
                ["def initialize"],
                [[f"@{snake(words(s.env))} = {self.env(s)}" for s in self.facts.settings] or ["freeze"]],
                ["end"],
                rank=0,
            )
        )
        return Module("config.rb", "config", "", ["class Config"], members, ["end"], 1, self.unit)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        port = self.port_env
        body = [
            ["config = Config.new", f"set :service, {self.core_type()}.new(config)"],
            [f"set :port, config.{snake(words(port))}", 'set :bind, "0.0.0.0"', "set :logging, true"],
        ]
        return Member("configure", ["configure do"], body, ["end"], topic=("main", "configure"), rank=0)

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            if module.role == "main":
                for named in named_endpoints(self.facts):
                    op = named.endpoint.op
                    module.members.append(
                        Member(
                            op.text,
                            [f'{op.verb.lower()} "{op.subject}" do'],
                            [
                                [
                                    "data = JSON.parse(request.body.read)",
                                    f"result = {snake(named.verb_words)}(data)",
                                ],
                                ["content_type :json", "result.to_json"],
                            ],
                            ["end"],
                            topic=tuple(named.verb_words),
                            rank=2,
                        )
                    )

    def extras(self) -> list[Module]:
        return templates(self, "views/{name}.erb", "<%= {expr} %>")

    def build(self) -> tuple[str, list[str]]:
        return "Gemfile", [
            'source "https://rubygems.org"',
            "",
            'gem "json"',
            'gem "pony"',
            'gem "puma"',
            'gem "sinatra"',
        ]

    def image(self) -> list[str]:
        return [
            "FROM ruby:3.3-slim",
            "WORKDIR /app",
            "COPY Gemfile .",
            "RUN bundle install",
            "COPY . .",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["bundle", "exec", "ruby", "{self.path("main", [])}"]',
        ]


def ruby_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Ruby(facts, unit))
