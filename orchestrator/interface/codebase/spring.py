"""Spring Boot services: a controller per endpoint, the logic in a service class, clients and repositories."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Dependency, Facts, Op
from orchestrator.interface.codebase.java import JavaGrpc
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, snake, stem, words
from orchestrator.interface.codebase.parts import Named, op_words
from orchestrator.interface.codebase.scaffold import Syntax, quote, scaffold, table_words


class JavaSpring(JavaGrpc):
    """A Spring Boot service: a controller per endpoint, the logic in its service class."""

    logic_in = "core"
    paths = {
        "main": "src/main/java/{package}/{stem_pascal}Application.java",
        "core": "src/main/java/{package}/service/{stem_pascal}ServiceImpl.java",
        "endpoint": "src/main/java/{package}/controller/{pascal}Controller.java",
        "client": "src/main/java/{package}/client/{pascal}.java",
        "store": "src/main/java/{package}/repository/{pascal}.java",
        "job": "src/main/java/{package}/task/{pascal}.java",
    }

    @property
    def package_path(self) -> str:
        return snake(self.names.stem)

    def dep_words(self, dep: Dependency) -> list[str]:
        if dep.protocol == "sql":
            return [*table_words(dep), "repository"]
        if dep.protocol == "queue":
            return [*table_words(dep), "consumer" if dep.ops[0].verb == "consume" else "sender"]
        if dep.protocol == "registry":
            return [*words(dep.name), "registration"]
        return [*(stem(dep.name)), "client"]

    def dep_ref(self, dep: Dependency) -> str:
        return camel(self.dep_words(dep))

    def header(self, role: str, subject: str) -> list[str]:
        package = self.package_path.replace("/", ".")
        sub = {
            "core": ".service",
            "endpoint": ".controller",
            "client": ".client",
            "store": ".repository",
            "job": ".task",
        }.get(role, "")
        spring = {
            "main": [
                "org.springframework.boot.SpringApplication",
                "org.springframework.boot.autoconfigure.SpringBootApplication",
            ],
            "core": [
                "org.springframework.beans.factory.annotation.Autowired",
                "org.springframework.http.HttpHeaders",
                "org.springframework.stereotype.Service",
            ],
            "endpoint": [
                "org.springframework.beans.factory.annotation.Autowired",
                "org.springframework.http.HttpEntity",
                "org.springframework.http.HttpHeaders",
                "org.springframework.web.bind.annotation.*",
            ],
            "client": [
                "org.springframework.http.*",
                "org.springframework.stereotype.Component",
                "org.springframework.web.client.RestTemplate",
            ],
            "job": [
                "org.springframework.scheduling.annotation.Scheduled",
                "org.springframework.stereotype.Component",
            ],
        }.get(role, [])
        lines = [f"package {package}{sub};", ""] + [f"import {name};" for name in spring]
        return [*lines, "import org.slf4j.Logger;", "import org.slf4j.LoggerFactory;", ""]

    def open_type(self, name: str, role: str, subject: str) -> list[str]:
        annotation = {
            "main": "@SpringBootApplication",
            "core": "@Service",
            "endpoint": "@RestController",
            "client": "@Component",
            "job": "@Component",
        }.get(role, "")
        if role == "store":
            dep = next(d for d in self.facts.dependencies if d.name == subject)
            if dep.protocol == "sql":
                return [
                    f"public interface {name} extends JpaRepository<{pascal(table_words(dep))}, String> {{"
                ]
        implements = f" implements {pascal(self.names.stem)}Service" if role == "core" else ""
        opened = [*([annotation] if annotation else []), f"public class {name}{implements} {{", ""]
        fields = [f"{self.pad}private static final Logger LOGGER = LoggerFactory.getLogger({name}.class);"]
        wired: list[tuple[str, str]] = []
        if role == "core":
            wired = [(pascal(self.dep_words(d)), self.dep_ref(d)) for d in self.facts.dependencies]
        elif role == "endpoint":
            wired = [(pascal([*self.names.stem, "service"]), camel([*self.names.stem, "service"]))]
        elif role == "job":
            job = next(j for j in self.facts.jobs if j.name == subject)
            callees = dict.fromkeys(step.callee for step in job.steps)
            wired = [
                (pascal(self.dep_words(self.facts.dependency(c))), self.dep_ref(self.facts.dependency(c)))
                for c in callees
            ]
        elif role == "client":
            fields += [
                f"{self.pad}private final RestTemplate restTemplate;",
                f"{self.pad}private final String baseUrl;",
            ]
        for type_name, field in wired:
            fields += ["", f"{self.pad}@Autowired", f"{self.pad}private {type_name} {field};"]
        return [*opened, *fields]

    def core_type(self) -> str:
        return pascal([*self.names.stem, "service", "impl"])

    def core_constructor(self, type_name: str) -> list[Member]:
        return []

    def endpoint_type(self, parts: list[str]) -> str:
        return pascal([*parts, "controller"])

    def dep_path(self, dep: Dependency) -> str:
        folder = {"queue": "mq", "registry": "config"}.get(dep.protocol)
        if folder is None:
            return super().dep_path(dep)
        return f"src/main/java/{self.package_path}/{folder}/{pascal(self.dep_words(dep))}.java"

    def function(self, name: str, params: str, ret: str = "void") -> tuple[list[str], list[str]]:
        return [f"public {ret} {name}({params}) {{".replace("public  ", "public ")], ["}"]

    def _params(self, op: Op, annotated: bool) -> str:
        found = re.findall(r"\{(\w+)\}", op.subject)
        params = [("@PathVariable " if annotated else "") + f"String {name}" for name in found]
        if op.verb in ("POST", "PUT"):
            params.append(("@RequestBody " if annotated else "") + "Object body")
        params.append(("@RequestHeader " if annotated else "") + "HttpHeaders headers")
        return ", ".join(params)

    def request_args(self, op: Op) -> str:
        if op.protocol != "http":
            return ""
        return ", ".join(p.split()[-1] for p in self._params(op, False).split(", "))

    def handler(self, named: Named) -> tuple[str, str, str]:
        return self.method(named.verb_words), self._params(named.endpoint.op, False), "Response<Object>"

    def enter(self, named: Named) -> list[list[str]]:
        op = named.endpoint.op
        return [[f'LOGGER.info("[{self.method(named.verb_words)}] {op.verb} {op.subject}");']]

    def endpoint_function(self, named: Named) -> tuple[list[str], list[str]]:
        op = named.endpoint.op
        signature = f"public HttpEntity<?> {self.method(named.verb_words)}({self._params(op, True)}) {{"
        return [f"@{op.verb.capitalize()}Mapping({quote(op.subject)})", signature], ["}"]

    def respond(self, named: Named) -> list[str]:
        service = camel([*self.names.stem, "service"])
        call = f"{service}.{self.method(named.verb_words)}({self.request_args(named.endpoint.op)})"
        return [f"return new HttpEntity<>({call});"]

    def core_result(self, named: Named) -> list[str]:
        return ['return new Response<>(1, "Success", null);']

    def call(self, var: str, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            f"var {var} = {target}.{method}({args});",
            f"if ({var} == null) {{",
            f'{self.pad}return new Response<>(0, "{what} failed", null);',
            "}",
        ]

    def soft_call(self, target: str, method: str, args: str, what: str) -> list[str]:
        return [
            "try {",
            f"{self.pad}{target}.{method}({args});",
            "} catch (Exception e) {",
            f'{self.pad}LOGGER.warn("[{what}] failed: {{}}", e.getMessage());',
            "}",
        ]

    def client_op(self, dep: Dependency, op: Op) -> tuple[list[str], list[list[str]], list[str]]:
        name = self.method(op_words(op))
        args = self._params(op, False) if op.protocol == "http" else ""
        if dep.protocol == "sql":
            entity = pascal(table_words(dep))
            return [f"List<{entity}> {name}();" if op.verb == "SELECT" else f"int {name}();"], [], []
        if op.protocol != "http":
            return [f"public void {name}() {{"], [[f'LOGGER.debug("[{name}] {op.text}");']], ["}"]
        path = re.sub(r"\{(\w+)\}", r'" + \1 + "', op.subject)
        entity = "body" if op.verb in ("POST", "PUT") else "null"
        return (
            [f"public Response {name}({args}) {{"],
            [
                [f"HttpEntity<Object> request = new HttpEntity<>({entity}, headers);"],
                [
                    f'ResponseEntity<Response> re = restTemplate.exchange(baseUrl + "{path}",'.replace(
                        ' + ""', ""
                    ),
                    f"{self.pad * 2}HttpMethod.{op.verb}, request, Response.class);",
                    "return re.getBody();",
                ],
            ],
            ["}"],
        )

    def client_setup(self, dep: Dependency) -> list[list[str]]:
        if dep.protocol != "http":
            return []
        return [["this.restTemplate = restTemplate;", f'this.baseUrl = "http://{dep.name}:{dep.port}";']]

    def config_module(self) -> Module:
        return Module("src/main/resources/application.yml", "config", head=_application_yml(self))

    def main_member(self, routes: list[str], jobs: list[str]) -> Member:
        name = pascal([*self.names.stem, "application"])
        return Member(
            "main",
            ["public static void main(String[] args) {"],
            [[f"SpringApplication.run({name}.class, args);"]],
            ["}"],
            topic=("main",),
            rank=0,
        )

    def job_body(self, job: object, calls: list[list[str]]) -> list[list[str]]:
        return [['LOGGER.debug("[run] tick");'], *calls]

    def finish(self, modules: list[Module]) -> None:
        for module in modules:
            for member in module.members:
                if module.role == "job":
                    member.head.insert(0, "@Scheduled(fixedDelay = 5000)")
                if module.role == "client" and member.name == "constructor":
                    member.head[0] = member.head[0].replace("(Config config)", "(RestTemplate restTemplate)")

    def build(self) -> tuple[str, list[str]]:
        return "pom.xml", _pom(self)

    def image(self) -> list[str]:
        return [
            "FROM maven:3.9-eclipse-temurin-8 AS builder",
            "WORKDIR /app",
            "COPY . .",
            "RUN mvn -q package -DskipTests",
            "",
            "FROM eclipse-temurin:8-jre",
            f"COPY --from=builder /app/target/{self.facts.name}-1.0.jar /app/app.jar",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            'ENTRYPOINT ["java", "-Xmx200m", "-jar", "/app/app.jar"]',
        ]

    def extras(self) -> list[Module]:
        from orchestrator.interface.codebase.springfiles import spring_extras

        return spring_extras(self)


def _application_yml(syn: JavaSpring) -> list[str]:
    facts, pad = syn.facts, syn.pad
    settings = {s.env: s for s in facts.settings}
    lines = [
        "server:",
        f"  port: {facts.port or 8080}",
        "",
        "spring:",
        "  application:",
        f"    name: {facts.name}",
    ]
    mysql = [s for s in settings if s.endswith("_MYSQL_HOST")]
    if mysql:
        base = mysql[0].removesuffix("_HOST")
        host, port = settings[mysql[0]].default or "", settings.get(f"{base}_PORT")
        database = settings.get(f"{base}_DATABASE")
        url = (
            f"jdbc:mysql://${{{base}_HOST:{host}}}:${{{base}_PORT:{port.default if port else 3306}}}/"
            f"${{{base}_DATABASE:{database.default if database else 'ts'}}}?useSSL=false"
        )
        lines += [
            "  datasource:",
            f"    url: {url}",
            f"    username: ${{{base}_USER}}",
            f"    password: ${{{base}_PASSWORD}}",
            "  jpa:",
            "    hibernate:",
            "      ddl-auto: update",
        ]
    if "rabbitmq_host" in settings:
        lines += [
            "  rabbitmq:",
            f"    host: ${{rabbitmq_host:{settings['rabbitmq_host'].default}}}",
            "    port: 5672",
        ]
    if "NACOS_ADDRS" in settings:
        lines += [
            "  cloud:",
            "    nacos:",
            "      discovery:",
            f"        server-addr: ${{NACOS_ADDRS:{settings['NACOS_ADDRS'].default}}}",
        ]
    rest = [s for s in facts.settings if not re.search(r"_MYSQL_|^NACOS_ADDRS$|^rabbitmq_host$", s.env)]
    if rest:
        lines += ["", f"{snake(syn.names.stem).replace('_', '-')}:"]
        lines += [
            f"{pad[:2]}{snake(words(s.env)).replace('_', '-')}: ${{{s.env}"
            + (f":{s.default}}}" if s.default else "}")
            for s in rest
        ]
    return [*lines, "", "logging:", "  level:", f"    {syn.package_path.replace('/', '.')}: INFO"]


def _pom(syn: JavaSpring) -> list[str]:
    artifacts = [
        "spring-boot-starter-web",
        "spring-boot-starter-security",
        "spring-boot-starter-data-jpa",
        "spring-cloud-starter-alibaba-nacos-discovery",
    ]
    if any(d.protocol == "queue" for d in syn.facts.dependencies):
        artifacts.append("spring-boot-starter-amqp")
    deps = [
        line
        for a in artifacts
        for line in ("    <dependency>", f"      <artifactId>{a}</artifactId>", "    </dependency>")
    ]
    return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<project xmlns="http://maven.apache.org/POM/4.0.0">',
        "  <modelVersion>4.0.0</modelVersion>",
        f"  <artifactId>{syn.facts.name}</artifactId>",
        "  <version>1.0</version>",
        "  <packaging>jar</packaging>",
        "",
        "  <parent>",
        "    <groupId>org.services</groupId>",
        "    <artifactId>ts-service</artifactId>",
        "    <version>1.0</version>",
        "  </parent>",
        "",
        "  <dependencies>",
        *deps,
        "  </dependencies>",
        "</project>",
    ]


def java_modules(facts: Facts, unit: int) -> list[Module]:
    """A Java service: a gRPC server when it serves gRPC, else a Spring Boot service."""
    syntax: Syntax = JavaGrpc(facts, unit) if facts.protocol == "grpc" else JavaSpring(facts, unit)
    return scaffold(syntax)
