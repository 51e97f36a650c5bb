"""C# services: gRPC servers (a project under src/) and background workers (a flat project)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op, Setting
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, stem, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold

_SERVER = {
    "main": "src/Program.cs",
    "config": "src/Config.cs",
    "core": "src/services/{core_pascal}.cs",
    "endpoint": "src/handlers/{pascal}Handler.cs",
    "client": "src/clients/{pascal}.cs",
    "store": "src/{stem_flat}store/{pascal}.cs",
    "job": "src/{pascal}.cs",
}
_WORKER = {
    "main": "Program.cs",
    "config": "Config.cs",
    "core": "{core_pascal}.cs",
    "endpoint": "handlers/{pascal}Handler.cs",
    "client": "{pascal}.cs",
    "store": "{pascal}.cs",
    "job": "{pascal}.cs",
}


class CSharp(Syntax):
    def __init__(self, facts: Facts, unit: int) -> None:
        super().__init__(facts, unit)
        self.paths = _SERVER if facts.protocol else _WORKER

    def method(self, parts: list[str]) -> str:
        return pascal(parts)

    def rpc_name(self, op: Op) -> str:
        return pascal(words(op.verb))

    def dep_words(self, dep: Dependency) -> list[str]:
        if dep.store in ("redis", "valkey", "mysql", "postgresql"):
            return [dep.store, *stem(self.facts.name), "store"]
        return super().dep_words(dep)

    def dep_ref(self, dep: Dependency) -> str:
        return "_" + camel(self.dep_words(dep))

    def header(self, role: str, subject: str) -> list[str]:
        path = self.path(role, ["x"]) if role in self.paths else ""
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        namespace = ".".join(
            ["".join(words(self.facts.name)), *[p for p in folder.split("/") if p and p != "src"]]
        )
        usings = ["System", "System.Threading.Tasks", "Grpc.Core", "Microsoft.Extensions.Logging"]
        return [*[f"using {u};" for u in usings], "", f"namespace {namespace};", ""]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        package, interface = self.facts.interface
        base = (
            f" : {pascal(words(package))}.{interface}.{interface}Base" if role == "core" and interface else ""
        )
        if role == "main":
            return ["public static class Program", "{"]
        if role == "job":
            base = " : BackgroundService"
        fields = [f"{self.pad}private readonly ILogger<{name}> _logger;"]
        if role == "core":
            fields += [
                f"{self.pad}private readonly {pascal(self.dep_words(d))} {self.dep_ref(d)};"
                for d in self.facts.dependencies
            ]
        if role == "job":
            job = next(j for j in self.facts.jobs if j.name == subject)
            used = [self.facts.dependency(c) for c in dict.fromkeys(step.callee for step in job.steps)]
            fields += [
                f"{self.pad}private readonly {pascal(self.dep_words(d))} {self.dep_ref(d)};" for d in used
            ]
        return [f"public class {name}{base}", "{", *fields]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if ret == "":
            return [f"public {name}({params})", "{"], ["}"]
        if ret in ("void", "static void"):
            return [f"public {'static ' if ret == 'static void' else ''}void {name}({params})", "{"], ["}"]
        modifier = "override " if "ServerCallContext" in params and not name.startswith("Handle") else ""
        static = "static " if name.startswith("Handle") else ""
        return [f"public {static}{modifier}async Task<{ret}> {name}({params})", "{"], ["}"]

    def handler(self, named: Named) -> tuple[str, str, str]:
        verb = named.endpoint.op.verb if named.endpoint.op.protocol == "grpc" else pascal(named.verb_words)
        return (
            "Handle" + pascal(named.verb_words),
            f"{verb}Request request, ServerCallContext context",
            f"{verb}Response",
        )

    def request_args(self, op: Op) -> str:
        return "request"

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"var {var} = await {target}.{method}Async({args});"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try",
            "{",
            f"{self.pad}await {target}.{method}Async({args});",
            "}",
            "catch (Exception ex)",
            "{",
            f'{self.pad}_logger.LogWarning(ex, "{what} failed");',
            "}",
        ]

    def log(self, level: str, message: str, value: str = "") -> str:
        method = {"debug": "LogDebug", "info": "LogInformation", "warn": "LogWarning"}[level]
        return f'_logger.{method}("{message}")'

    def env(self, setting: Setting) -> str:
        read = f'Environment.GetEnvironmentVariable("{setting.env}")'
        if setting.default is None:
            return f'{read} ?? throw new InvalidOperationException("{setting.env} is not set")'
        return f"{read} ?? {quote(setting.default)}"

    def delegate(self, named: Named) -> list[str]:
        return [
            f"return await {pascal([*named.words, 'handler'])}.{self.handler(named)[0]}(request, context);"
        ]

    def respond(self, named: Named) -> list[str]:
        return [f"return new {self.handler(named)[2]}();"]

    def enter(self, named: Named) -> list[list[str]]:
        return []

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = f"{pascal(op_words(op))}Async"
        if op.protocol == "redis":
            command = {
                "HGET": "HashGetAsync(key, CartField)",
                "HSET": "HashSetAsync(key, new[] { new HashEntry(CartField, value) })",
                "DEL": "KeyDeleteAsync(key)",
            }.get(op.verb, f'ExecuteAsync("{op.verb}", key)')
            params = "string key, byte[] value" if op.verb == "HSET" else "string key"
            body = [["var db = _connection.GetDatabase();"], [f"return await db.{command};"]]
            return [f"public async Task<object> {name}({params})", "{"], body, ["}"]
        if op.protocol == "sql":
            return (
                [f"public async Task<int> {name}(object row)", "{"],
                [
                    [f'await using var command = _dataSource.CreateCommand("{op.verb} {op.subject}");'],
                    ["return await command.ExecuteNonQueryAsync();"],
                ],
                ["}"],
            )
        if op.protocol == "grpc":
            return (
                [f"public async Task<{op.verb}Response> {name}({op.verb}Request request)", "{"],
                [[f"return await _client.{op.verb}Async(request, deadline: DateTime.UtcNow.Add(Timeout));"]],
                ["}"],
            )
        return (
            [f"public async Task<object> {name}(object request)", "{"],
            [[f'return await _transport.SendAsync("{op.text}", request, Timeout);']],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        env = address_setting(self.facts, dep)
        if dep.store in ("redis", "valkey"):
            return [[f"_connection = ConnectionMultiplexer.Connect(config.{pascal(words(env))});"]]
        if dep.protocol == "sql":
            return [[f"_dataSource = NpgsqlDataSource.Create(config.{pascal(words(env))});"]]
        return [[f"_client = new Transport(config.{pascal(words(env))});"]]

    def core_constructor(self, type_name: str) -> list[Member]:
        params = ", ".join(
            [
                *(f"{pascal(self.dep_words(d))} {camel(self.dep_words(d))}" for d in self.facts.dependencies),
                f"ILogger<{type_name}> logger",
            ]
        )
        body = [
            [f"{self.dep_ref(d)} = {camel(self.dep_words(d))};" for d in self.facts.dependencies]
            + ["_logger = logger;"]
        ]
        return [Member("constructor", [f"public {type_name}({params})", "{"], body, ["}"], rank=0)]

    def config_module(self) -> Module:
        members = [
            Member(
                s.env,
                [f"public string {pascal(words(s.env))} {{ get; }} = {self.env(s)};"],
                callable=False,
                gap=False,
            )
            for s in self.facts.settings
        ]
        head = self.header("config", "") + ["public class Config", "{"]
        return Module(self.path("config", []), "config", "", head, members, ["}"], 1, self.unit)

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.core_type()
        body = [
            [
                "var builder = WebApplication.CreateBuilder(args);",
                "var config = new Config();",
                "builder.Services.AddSingleton(config);",
                "builder.Services.AddGrpc();",
            ],
            [
                f"builder.Services.AddSingleton<{pascal(self.dep_words(d))}>();"
                for d in self.facts.dependencies
            ]
            or ["builder.Services.AddLogging();"],
            [f"builder.Services.AddHostedService<{job}>();" for job in jobs]
            or ["builder.Logging.AddConsole();"],
            [
                "var app = builder.Build();",
                *([f"app.MapGrpcService<{core}>();"] if self.facts.protocol == "grpc" else []),
                "app.Run();",
            ],
        ]
        return Member(
            "main", ["public static void Main(string[] args)", "{"], body, ["}"], topic=("main",), rank=0
        )

    def start_job(self, parts: list[str]) -> str:
        return pascal(parts)

    def main_type(self) -> str:
        return "Program"

    def job_loop(self, parts: list[str]) -> Member | None:
        run = pascal(["run", *parts])
        body = [
            [
                "while (!stoppingToken.IsCancellationRequested)",
                "{",
                f"{self.pad}await {run}Async(stoppingToken);",
                "}",
            ]
        ]
        return Member(
            "ExecuteAsync",
            ["protected override async Task ExecuteAsync(CancellationToken stoppingToken)", "{"],
            body,
            ["}"],
            rank=0,
        )

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            for member in module.members:
                if module.role == "job" and member.name.startswith("Run"):
                    member.head = [
                        f"private async Task {member.name}Async(CancellationToken stoppingToken)",
                        "{",
                    ]

    def build(self) -> tuple[str, list[str]]:
        folder = "src/" if self.facts.protocol else ""
        return f"{folder}{self.facts.name}.csproj", [
            '<Project Sdk="Microsoft.NET.Sdk.Web">',
            "  <PropertyGroup>",
            "    <TargetFramework>net8.0</TargetFramework>",
            "    <Nullable>enable</Nullable>",
            "  </PropertyGroup>",
            "  <ItemGroup>",
            '    <PackageReference Include="Grpc.AspNetCore" Version="2.63.0" />',
            *(
                ['    <PackageReference Include="StackExchange.Redis" Version="2.7.33" />']
                if any(d.store in ("redis", "valkey") for d in self.facts.dependencies)
                else []
            ),
            *(
                ['    <PackageReference Include="Npgsql" Version="8.0.3" />']
                if any(d.store == "postgresql" for d in self.facts.dependencies)
                else []
            ),
            "  </ItemGroup>",
            "</Project>",
        ]

    def image(self) -> list[str]:
        folder = "src/" if self.facts.protocol else ""
        return [
            "FROM mcr.microsoft.com/dotnet/sdk:8.0 AS builder",
            "WORKDIR /app",
            "COPY . .",
            f"RUN dotnet publish {folder}{self.facts.name}.csproj -c Release -o /out",
            "",
            "FROM mcr.microsoft.com/dotnet/aspnet:8.0",
            "COPY --from=builder /out /app",
            "WORKDIR /app",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["dotnet", "{self.facts.name}.dll"]',
        ]


def csharp_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(CSharp(facts, unit))
