"""Java gRPC servers and Kotlin workers, written through the shared scaffold (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Dependency, Facts, Op
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    op_words,
)
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold


class JavaGrpc(Syntax):
    paths = {
        "main": "src/main/java/{package}/{core_pascal}.java",
        "core": "src/main/java/{package}/{core_pascal}.java",
        "config": "src/main/java/{package}/Config.java",
        "endpoint": "src/main/java/{package}/{pascal}Handler.java",
        "client": "src/main/java/{package}/{pascal}.java",
        "store": "src/main/java/{package}/{pascal}.java",
        "job": "src/main/java/{package}/{pascal}.java",
    }

    @property
    def package_path(self) -> str:
        return self.names.package.replace(".", "/") or "app"

    def header(self, role: str, subject: str) -> list[str]:
        grpc = [
            "import io.grpc.Server;",
            "import io.grpc.ServerBuilder;",
            "import io.grpc.stub.StreamObserver;",
        ]
        common = ["import org.apache.logging.log4j.LogManager;", "import org.apache.logging.log4j.Logger;"]
        return [
            f"package {self.package_path.replace('/', '.')};",
            "",
            *(grpc if role in ("main", "core") else []),
            *common,
            "",
        ]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        logger = f"{self.pad}private static final Logger logger = LogManager.getLogger({name}.class);"
        return [f"public final class {name} {{", "", logger]

    def handler(self, named: Named) -> tuple[str, str, str]:
        verb = named.endpoint.op.verb if named.endpoint.op.protocol == "grpc" else pascal(named.verb_words)
        return self.method(["handle", *named.verb_words]), f"{verb}Request req", f"static {verb}Response"

    def request_args(self, op: Op) -> str:
        return "req"

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if params.endswith("Request req") and ret.endswith("Response") and not name.startswith("handle"):
            verb = params.split("Request")[0]
            params = f"{params}, StreamObserver<{verb}Response> responseObserver"
            ret = "void"
        visibility = "public " if ret != "static void" or name == "main" else "private "
        return [f"{visibility}{ret} {name}({params}) {{".replace("  ", " ")], ["}"]

    def delegate(self, named: Named) -> list[str]:
        handler_type = self.type_name([*named.words, "handler"])
        return [
            f"responseObserver.onNext({handler_type}.{self.handler(named)[0]}(req));",
            "responseObserver.onCompleted();",
        ]

    def respond(self, named: Named) -> list[str]:
        return [f"return {self.handler(named)[2].split()[-1]}.newBuilder().build();"]

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.type_name(self.names.core)
        body = [
            ["var config = new Config();", f"var service = new {core}(config);"],
            [
                f"Server server = ServerBuilder.forPort(Integer.parseInt(Config.{self.port_env}))",
                f"{self.pad * 2}.addService(service)",
                f"{self.pad * 2}.build()",
                f"{self.pad * 2}.start();",
            ],
            *([jobs] if jobs else []),
            [
                f'logger.info("{core} started, listening on " + server.getPort());',
                "Runtime.getRuntime().addShutdownHook(new Thread(server::shutdown));",
                "server.awaitTermination();",
            ],
        ]
        return Member(
            "main",
            ["public static void main(String[] args) throws Exception {"],
            body,
            ["}"],
            topic=("main", "start"),
            rank=0,
        )

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = self.method(op_words(op))
        if op.protocol == "grpc":
            head = [f"public {op.verb}Response {name}({op.verb}Request req) {{"]
            body = [
                [
                    "return stub.withDeadlineAfter(timeoutMillis, "
                    f"TimeUnit.MILLISECONDS).{camel(words(op.verb))}(req);"
                ]
            ]
        else:
            head = [f"public String {name}(Object req) throws IOException {{"]
            body = [[f"return transport.send({quote(op.text)}, req, timeoutMillis);"]]
        return head, body, ["}"]

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        env = address_setting(self.facts, dep)
        return [
            [
                f"var channel = ManagedChannelBuilder.forTarget(config.{env}).usePlaintext().build();",
                "this.stub = "
                f"{pascal(words(dep.ops[0].interface or dep.name))}Grpc.newBlockingStub(channel);",
            ]
        ]

    def config_module(self) -> Module:
        members = [
            Member(s.env, [f"static final String {s.env} = {self.env(s)};"], callable=False, gap=False)
            for s in self.facts.settings
        ]
        members.append(
            Member(
                "envOr",
                ["private static String envOr(String name, String fallback) {"],
                [["var value = System.getenv(name);"], ["return value == null ? fallback : value;"]],
                ["}"],
                rank=0,
            )
        )
        members.append(
            Member(
                "requireEnv",
                ["private static String requireEnv(String name) {"],
                [
                    [
                        "var value = System.getenv(name);",
                        "if (value == null) {",
                        f'{self.pad}throw new IllegalStateException(name + " is not set");',
                        "}",
                    ],
                    ["return value;"],
                ],
                ["}"],
                rank=0,
            )
        )
        return self.typed(self.path("config", []), "config", "", "Config", members)

    def build(self) -> tuple[str, list[str]]:
        return "build.gradle", [
            "plugins {",
            f"{self.pad}id 'java'",
            f"{self.pad}id 'application'",
            f"{self.pad}id 'com.google.protobuf' version '0.9.4'",
            "}",
            "",
            f"group = '{self.package_path.replace('/', '.')}'",
            f"version = '{self.facts.version}'",
            "",
            "dependencies {",
            f"{self.pad}implementation 'io.grpc:grpc-netty-shaded:1.64.0'",
            f"{self.pad}implementation 'io.grpc:grpc-protobuf:1.64.0'",
            f"{self.pad}implementation 'io.grpc:grpc-stub:1.64.0'",
            f"{self.pad}implementation 'org.apache.logging.log4j:log4j-core:2.23.1'",
            "}",
            "",
            f"application {{\n{self.pad}mainClass = "
            f"'{self.package_path.replace('/', '.')}.{self.type_name(self.names.core)}'\n}}",
        ]

    def image(self) -> list[str]:
        return [
            "FROM eclipse-temurin:21-jdk AS builder",
            "WORKDIR /app",
            "COPY . .",
            "RUN ./gradlew installDist",
            "",
            "FROM eclipse-temurin:21-jre",
            "COPY --from=builder /app/build/install /app",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["/app/{self.facts.name}/bin/{self.facts.name}"]',
        ]


class Kotlin(JavaGrpc):
    paths = {
        "main": "src/main/kotlin/{stem_flat}/main.kt",
        "core": "src/main/kotlin/{stem_flat}/{core_pascal}.kt",
        "config": "src/main/kotlin/{stem_flat}/Config.kt",
        "endpoint": "src/main/kotlin/{stem_flat}/{pascal}Handler.kt",
        "client": "src/main/kotlin/{stem_flat}/{pascal}.kt",
        "store": "src/main/kotlin/{stem_flat}/{pascal}.kt",
        "job": "src/main/kotlin/{stem_flat}/{pascal}.kt",
    }
    end = ""

    def depth_of(self, role: str) -> int:
        return 0 if role == "main" else 1

    def header(self, role: str, subject: str) -> list[str]:
        return [
            f"package {''.join(self.names.stem)}",
            "",
            "import org.apache.logging.log4j.LogManager",
            "",
            *(['private val logger = LogManager.getLogger("main")', ""] if role == "main" else []),
        ]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        return [
            f"class {name}(private val config: Config) {{",
            f"{self.pad}private val logger = LogManager.getLogger({name}::class.java)",
        ]

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        if name[:1].isupper():
            return ["init {"], ["}"]
        returns = "" if ret in ("void", "", "static void") else f": {ret.split()[-1]}"
        return [f"fun {name}({params}){returns} {{"], ["}"]

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [f"val {var} = {target}.{method}({args})"]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}{target}.{method}({args})",
            "} catch (e: Exception) {",
            f'{self.pad}logger.warn("{what} failed: ${{e.message}}")',
            "}",
        ]

    def dep_ref(self, dep: Dependency) -> str:
        return camel(self.dep_words(dep))

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        core = self.type_name(self.names.core)
        body = [
            ["val config = Config()", f"val service = {core}(config)"],
            [f'logger.info("{self.facts.name} started")'],
            [f"service.{j}" for j in jobs] or ["service.toString()"],
        ]
        return Member("main", ["fun main() {"], body, ["}"], topic=("main", "start"), rank=0)

    def start_job(self, parts: list[str]) -> str:
        return f"{self.method(['run', *parts])}()"

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = self.method(op_words(op))
        return (
            [f"fun {name}(request: Any): Any {{"],
            [[f"return transport.send({quote(op.text)}, request)"]],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        return [[f"transport = Transport.connect(config.{camel(words(address_setting(self.facts, dep)))})"]]

    def config_module(self) -> Module:
        members = [
            Member(
                s.env,
                [
                    f"val {camel(words(s.env))}: String = "
                    + (
                        f'System.getenv("{s.env}") ?: {quote(s.default)}'
                        if s.default is not None
                        else f'requireNotNull(System.getenv("{s.env}")) {{ "{s.env} must be set" }}'
                    )
                ],
                callable=False,
                gap=False,
            )
            for s in self.facts.settings
        ]
        return Module(
            self.path("config", []),
            "config",
            "",
            self.header("config", "") + ["class Config {"],
            members,
            ["}"],
            1,
            self.unit,
        )

    def build(self) -> tuple[str, list[str]]:
        return "build.gradle.kts", [
            "plugins {",
            f'{self.pad}kotlin("jvm") version "2.0.0"',
            f"{self.pad}application",
            "}",
            "",
            f'version = "{self.facts.version}"',
            "",
            "dependencies {",
            f'{self.pad}implementation("org.apache.kafka:kafka-clients:3.7.0")',
            f'{self.pad}implementation("org.apache.logging.log4j:log4j-core:2.23.1")',
            "}",
            "",
            "application {",
            f'{self.pad}mainClass.set("{"".join(self.names.stem)}.MainKt")',
            "}",
        ]

    def image(self) -> list[str]:
        return [
            "FROM gradle:8-jdk21 AS builder",
            "WORKDIR /app",
            "COPY . .",
            "RUN gradle shadowJar",
            "",
            "FROM eclipse-temurin:21-jre",
            "COPY --from=builder /app/build/libs/*-all.jar /app/app.jar",
            'ENTRYPOINT ["java", "-jar", "/app/app.jar"]',
        ]


def kotlin_modules(facts: Facts, unit: int) -> list[Module]:
    return scaffold(Kotlin(facts, unit))
