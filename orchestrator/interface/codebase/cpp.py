"""C++ gRPC services, written through the shared scaffold (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import pascal, snake, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class Cpp(Syntax):
    paths = {
        "main": "src/server.cpp",
        "core": "src/server.cpp",
        "config": "src/config.cpp",
        "endpoint": "src/{snake}.cpp",
        "client": "src/{snake}.cpp",
        "store": "src/{snake}.cpp",
        "job": "src/{snake}.cpp",
    }
    depth = 0
    main_last = True

    def method(self, parts: list[str]) -> str:
        return snake(parts)

    def rpc_name(self, op: Op) -> str:
        return pascal(words(op.verb))

    def dep_ref(self, dep: Dependency) -> str:
        return snake(self.dep_words(dep)) + "_"

    def header(self, role: str, subject: str) -> list[str]:
        includes = ["<string>", "<grpcpp/grpcpp.h>", '"config.h"', '"logger.h"']
        if role in ("main", "core"):
            includes += ['"handlers.h"']
        return [f"#include {name}" for name in includes] + [""]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        core = self.core_type()
        if ret == "":
            return [f"{core}::{core}({params.replace('Config config', 'const Config& config')}) {{"], ["}"]
        if name[:1].isupper():
            return [f"grpc::Status {core}::{name}({params}) {{"], ["}"]
        return [f"{ret} {name}({params}) {{"], ["}"]

    def handler(self, named: Named) -> tuple[str, str, str]:
        verb = named.endpoint.op.verb
        params = f"grpc::ServerContext* context, const {verb}Request* request, {verb}Response* reply"
        return "handle_" + snake(named.verb_words), params, "grpc::Status"

    def request_args(self, op: Op) -> str:
        return "*request"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"auto {snake(words(var))} = {target}.{method}({args});"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}{target}.{method}({args});",
            "} catch (const std::exception& e) {",
            f'{self.pad}logger->warn("{what} failed: {{}}", e.what());',
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        return f'logger->{level}("{message}")'

    def env(self, setting: Setting) -> str:
        if setting.default is None:
            return f'require_env("{setting.env}")'
        return f'env_or("{setting.env}", {quote(setting.default)})'

    def delegate(self, named: Named) -> list[str]:
        return [f"return {self.handler(named)[0]}(context, request, reply);"]

    def respond(self, named: Named) -> list[str]:
        return ["return grpc::Status::OK;"]

    def core_constructor(self, type_name: str) -> list[Member]:
        head, tail = self.function(type_name, "Config config", "")
        body = [
            [
                f"{self.dep_ref(d)} = std::make_unique<{pascal(self.dep_words(d))}>(config);"
                for d in self.facts.dependencies
            ]
            or ['logger->info("service ready");']
        ]
        return [Member("constructor", head, body, tail, rank=0)]

    def config_module(self) -> Module:
        reads = [[f"config.{snake(words(s.env))} = {self.env(s)};"] for s in self.facts.settings]
        members = [
            Member(
                "env_or",
                ["std::string env_or(const char* name, const std::string& fallback) {"],
                [
                    ["const char* value = std::getenv(name);"],
                    ["return value ? std::string(value) : fallback;"],
                ],
                ["}"],
                rank=0,
            ),
            Member(
                "load_config",
                ["Config load_config() {"],
                [["Config config;"], *reads, ["return config;"]],
                ["}"],
                rank=0,
            ),
        ]
        return Module(
            self.path("config", []),
            "config",
            "",
            ["#include <cstdlib>", '#include "config.h"', ""],
            members,
            unit=self.unit,
        )

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.core_type()
        body = [
            ["auto config = load_config();", f"{core} service(config);"],
            [
                "grpc::ServerBuilder builder;",
                f'builder.AddListeningPort("0.0.0.0:" + config.{snake(words(self.port_env))}, '
                "grpc::InsecureServerCredentials());",
                "builder.RegisterService(&service);",
            ],
            [
                "std::unique_ptr<grpc::Server> server(builder.BuildAndStart());",
                f'logger->info("{self.facts.name} listening on port '
                f'{{}}", config.{snake(words(self.port_env))});',
                "server->Wait();",
            ],
            ["return 0;"],
        ]
        return Member("main", ["int main(int argc, char** argv) {"], body, ["}"], topic=("main",), rank=0)

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = snake(op_words(op))
        return (
            [f"std::string {pascal(self.dep_words(dep))}::{name}(const std::string& request) {{"],
            [
                [
                    "grpc::ClientContext context;",
                    "context.set_deadline(std::chrono::system_clock::now() + timeout_);",
                ],
                [f'return transport_->call("{op.text}", request, &context);'],
            ],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return [
            [f"transport_ = Transport::connect(config.{snake(words(address_setting(self.facts, dep)))});"]
        ]

    def build(self) -> tuple[str, list[str]]:
        return "CMakeLists.txt", [
            "cmake_minimum_required(VERSION 3.20)",
            f"project({snake(self.names.stem)} CXX)",
            "",
            "set(CMAKE_CXX_STANDARD 17)",
            "find_package(gRPC CONFIG REQUIRED)",
            "find_package(nlohmann_json CONFIG REQUIRED)",
            "",
            "file(GLOB SOURCES src/*.cpp)",
            f"add_executable({snake(self.names.stem)} ${{SOURCES}})",
            f"target_link_libraries({snake(self.names.stem)} gRPC::grpc++ nlohmann_json::nlohmann_json)",
        ]

    def image(self) -> list[str]:
        return [
            "FROM alpine:3.20 AS builder",
            "RUN apk add --no-cache build-base cmake grpc-dev nlohmann-json",
            "WORKDIR /app",
            "COPY . .",
            "RUN cmake -B build && cmake --build build",
            "",
            "FROM alpine:3.20",
            "RUN apk add --no-cache grpc-cpp",
            f"COPY --from=builder /app/build/{snake(self.names.stem)} /usr/local/bin/",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["{snake(self.names.stem)}"]',
        ]


def cpp_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Cpp(facts, unit))
