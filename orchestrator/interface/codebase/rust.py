"""Rust (axum) services, written through the shared scaffold (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import pascal, snake, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    dependency_words,
    named_endpoints,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, job_names, quote, scaffold


class Rust(Syntax):
    paths = {
        "main": "src/main.rs",
        "config": "src/config.rs",
        "core": "src/{stem_snake}_service.rs",
        "endpoint": "src/{stem_snake}_service/{snake}.rs",
        "client": "src/{stem_snake}_service/{snake}.rs",
        "store": "src/{stem_snake}_service/{snake}.rs",
        "job": "src/{snake}.rs",
    }

    def depth_of(self, role: str) -> int:
        return 1 if role in ("core", "client", "store") else 0

    def method(self, parts: list[str]) -> str:
        return snake(parts)

    def dep_path(self, dep: Dependency) -> str:
        return self.path("client", dependency_words(dep))

    def dep_ref(self, dep: Dependency) -> str:
        return f"state.{snake(self.dep_words(dep))}"

    def header(self, role: str, subject: str) -> list[str]:
        uses = ["anyhow::Result", "log::{debug, info, warn}", "serde_json::Value"]
        mods: list[str] = []
        if role == "main":
            mods = ["mod config;", f"mod {snake(self.names.stem)}_service;"]
            mods += [f"mod {self.path('job', parts).rsplit('/', 1)[-1][:-3]};" for parts in self.job_parts()]
            uses = ["axum::routing::{get, post}", "axum::Router", "config::Config", *uses]
        elif role == "core":
            subs = [
                *(snake(n.words) for n in named_endpoints(self.facts)),
                *(snake(dependency_words(d)) for d in self.facts.dependencies),
            ]
            mods = [f"pub mod {name};" for name in dict.fromkeys(subs)]
            uses = ["crate::config::Config", *uses]
        return [*mods, *([""] if mods else []), *[f"use {u};" for u in uses], ""]

    def job_parts(self) -> list[list[str]]:
        return [parts for _, parts in job_names(self.facts)]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        fields = (
            [
                f"{self.pad}pub {snake(self.dep_words(d))}: {pascal(self.dep_words(d))},"
                for d in self.facts.dependencies
            ]
            if role == "core"
            else [f"{self.pad}http: reqwest::Client,", f"{self.pad}base_url: String,"]
        )
        return ["#[derive(Clone)]", f"pub struct {name} {{", *fields, "}", "", f"impl {name} {{"]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return ["pub fn new(config: &Config) -> Self {"], ["}"]
        returns = "" if ret in ("void", "static void") else f" -> Result<{ret}>"
        receiver = "&self" if params in ("", "body: &Value") and not name.startswith("handle") else ""
        joined = ", ".join(p for p in (receiver, params) if p)
        return [f"pub async fn {name}({joined}){returns} {{"], ["}"]

    def handler(self, named: Named) -> tuple[str, str, str]:
        return "handle_" + snake(named.verb_words), f"state: &{self.core_type()}, body: Value", "Value"

    def request_args(self, op: Op) -> str:
        return "&body"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            f"let {snake(words(var))} = {target}.{method}({args}).await?;",
            f'debug!("{what}: {{:?}}", {snake(words(var))});',
        ]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            f"if let Err(err) = {target}.{method}({args}).await {{",
            f'{self.pad}warn!("{what} failed: {{}}", err);',
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f'{level}!("{message}")'

    def ret(self, expr: str) -> str:
        return f"Ok({expr})"

    def enter(self, named: Named) -> list[list[str]]:
        return [[f'info!("{named.endpoint.op.text}");']]

    def respond(self, named: Named) -> list[str]:
        return ["Ok(Value::Null)"]

    def core_constructor(self, type_name: str) -> list[Member]:
        fields = [
            f"{self.pad}{snake(self.dep_words(d))}: {pascal(self.dep_words(d))}::new(config),"
            for d in self.facts.dependencies
        ]
        return [
            Member(
                "new", ["pub fn new(config: &Config) -> Self {"], [["Self {", *fields, "}"]], ["}"], rank=0
            )
        ]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        method = (op.verb if op.protocol == "http" else "post").lower()
        path = op.subject if op.protocol == "http" else f"/{snake(op_words(op))}"
        return (
            [f"pub async fn {snake(op_words(op))}(&self, body: &Value) -> Result<Value> {{"],
            [
                ["let client = &self.http;", f'let url = format!("{{}}{path}", self.base_url);'],
                [f'debug!("{method.upper()} {{}}", url);'],
                [f"let value = client.{method}(url).json(body).send().await?.json::<Value>().await?;"],
                ["Ok(value)"],
            ],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        env = snake(words(address_setting(self.facts, dep)))
        return [
            [
                "Self {",
                f"{self.pad}http: reqwest::Client::new(),",
                f'{self.pad}base_url: format!("http://{{}}", config.{env}),',
                "}",
            ]
        ]

    def config_module(self) -> Module:
        fields = [f"{self.pad}pub {snake(words(s.env))}: String," for s in self.facts.settings]
        reads = [
            f"{self.pad}{snake(words(s.env))}: "
            + (
                f'env::var("{s.env}").unwrap_or_else(|_| {quote(s.default)}.to_string()),'
                if s.default is not None
                else f'env::var("{s.env}")?,'
            )
            for s in self.facts.settings
        ]
        head = [
            "use std::env;",
            "",
            "#[derive(Clone, Debug)]",
            "pub struct Config {",
            *fields,
            "}",
            "",
            "impl Config {",
        ]
        members = [
            Member(
                "from_env",
                ["pub fn from_env() -> anyhow::Result<Self> {"],
                [["Ok(Self {", *reads, "})"]],
                ["}"],
                rank=0,
            )
        ]
        return Module(self.path("config", []), "config", "", head, members, ["}"], 1, self.unit)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.core_type()
        body = [
            [
                "env_logger::init();",
                "let config = Config::from_env()?;",
                f"let state = {core}::new(&config);",
            ],
            ["let app = Router::new()", *[self.pad + r for r in routes], f"{self.pad}.with_state(state);"],
            [
                f'let listener = tokio::net::TcpListener::bind(format!("0.0.0.0:{{}}", '
                f"config.{snake(words(self.port_env))})).await?;",
                'info!("listening on {}", listener.local_addr()?);',
                "axum::serve(listener, app).await?;",
                "Ok(())",
            ],
        ]
        return Member(
            "main",
            ["#[tokio::main]", "async fn main() -> Result<()> {"],
            body,
            ["}"],
            topic=("main",),
            rank=0,
        )

    def route(self, named: Named) -> str:
        op = named.endpoint.op
        return (
            f'.route("{op.subject}", '
            f"{op.verb.lower()}({snake(named.words)}::handle_{snake(named.verb_words)}))"
        )

    def build(self) -> tuple[str, list[str]]:
        return "Cargo.toml", [
            "[package]",
            f'name = "{snake(self.names.stem)}"',
            f'version = "{self.facts.version}"',
            'edition = "2021"',
            "",
            "[dependencies]",
            'anyhow = "1"',
            'axum = "0.7"',
            'env_logger = "0.11"',
            'log = "0.4"',
            'reqwest = { version = "0.12", features = ["json"] }',
            'serde_json = "1"',
            'tokio = { version = "1", features = ["full"] }',
        ]

    def image(self) -> list[str]:
        return [
            "FROM rust:1.79 AS builder",
            "WORKDIR /app",
            "COPY . .",
            "RUN cargo build --release",
            "",
            "FROM debian:bookworm-slim",
            f"COPY --from=builder /app/target/release/{snake(self.names.stem)} /usr/local/bin/",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["{snake(self.names.stem)}"]',
        ]


def rust_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Rust(facts, unit))
