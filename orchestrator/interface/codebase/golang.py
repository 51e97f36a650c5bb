"""Go services: a main package with the server, its configuration, a file per endpoint and per dependency."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Facts, Job, Step
from orchestrator.interface.codebase.goparts import client_module, config_module, main_member
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, snake, stem, words
from orchestrator.interface.codebase.parts import (
    Named,
    address_setting,
    dependency_words,
    named_endpoints,
    op_words,
    quoted,
    result_name,
)
from orchestrator.interface.codebase.scaffold import job_names


class Go:
    """Writes one Go service: ``main.go``, ``config.go``, the server type's file, and a file per endpoint,
    dependency and job, all in package main."""

    def __init__(self, facts: Facts, unit: int) -> None:
        self.facts, self.unit, self.pad = facts, unit, " " * unit
        self.package, self.interface = facts.interface
        self.core_words = words(self.interface)[:-1] if self.interface else []
        self.receiver = camel(self.core_words) if self.core_words else camel([*stem(facts.name), "server"])
        self.recv = self.receiver[:1]
        self.sig = f"func ({self.recv} *{self.receiver})"
        self.mod = f"{facts.app}/{facts.name}"
        self.named = named_endpoints(facts)

    def modules(self) -> list[Module]:
        modules = [self.build(), config_module(self), self.main(), self.core()]
        modules += [self.endpoint(item) for item in self.named]
        modules += [client_module(self, dep) for dep in self.facts.dependencies]
        modules += [self.job(job, parts) for job, parts in job_names(self.facts)]
        return [*modules, self.image()]

    def imports(self, *names: str) -> list[str]:
        """``package main`` and an import block: the standard library first, then the rest."""
        std = [n for n in names if " " not in n and "." not in n.split("/")[0]]
        ext = [n for n in names if n not in std]
        lines = ["package main", "", "import ("] + [f"{self.pad}{quoted(n)}" for n in std]
        if ext:
            lines += [""] + [f"{self.pad}{quoted(n)}" if " " not in n else f"{self.pad}{n}" for n in ext]
        return [*lines, ")"]

    def call(self, step: Step, fail: list[str], taken: set[str]) -> list[str]:
        """A call to a dependency: a critical one fails the caller with ``fail``, another is logged."""
        pad, dep = self.pad, self.facts.dependency(step.callee)
        target = f"{self.recv}.{camel(dependency_words(dep))}.{camel(op_words(step.op))}"
        args = "ctx" if step.op.protocol != "grpc" else f"ctx, &pb.{step.op.verb}Request{{}}"
        deadline: list[str] = []
        if step.timeout_ms:
            args = args.replace("ctx", "callCtx", 1)
            deadline = [
                f"callCtx, cancel := context.WithTimeout(ctx, {int(step.timeout_ms)}*time.Millisecond)",
                "defer cancel()",
            ]
        what = " ".join(op_words(step.op))
        if not step.critical:
            return [
                *deadline,
                f"if _, err := {target}({args}); err != nil {{",
                f'{pad}log.Warnf("{what}: %v", err)',
                "}",
            ]
        var = result_name(step.op, taken)
        failing = [pad + line.replace("%WHAT%", what) for line in fail]
        return [
            *deadline,
            f"{var}, err := {target}({args})",
            "if err != nil {",
            *failing,
            "}",
            f'log.Debugf("{what}: %v", {var})',
        ]

    def build(self) -> Module:
        requires = ["github.com/sirupsen/logrus v1.9.3", "google.golang.org/grpc v1.64.0"]
        lines = [f"module {self.mod}", "", "go 1.22", "", "require (", *[self.pad + r for r in requires], ")"]
        return Module("go.mod", "build", head=lines)

    def main(self) -> Module:
        members = [main_member(self)]
        if self.facts.protocol == "grpc":
            for item in (n for n in self.named if n.endpoint.op.protocol == "grpc"):
                verb = item.endpoint.op.verb
                signature = (
                    f"{self.sig} {verb}(ctx context.Context, req "
                    f"*pb.{verb}Request) (*pb.{verb}Response, error) {{"
                )
                body = [[f"return {self.recv}.handle{verb}(ctx, req)"]]
                members.append(Member(verb, [signature], body, ["}"], topic=tuple(item.verb_words), rank=2))
        extra = [f'pb "{self.mod}/genproto"'] if self.package else []
        names = (
            "context",
            "fmt",
            "net",
            "net/http",
            "os",
            "os/signal",
            "syscall",
            "github.com/sirupsen/logrus",
        )
        head = [*self.imports(*names, "google.golang.org/grpc", *extra), "", "var log = logrus.New()"]
        return Module("main.go", "main", head=head, members=members, unit=self.unit)

    def core(self) -> Module:
        """The server type: its dependencies, its constructor and the helpers its handlers share."""
        pad, recv, receiver = self.pad, self.recv, self.receiver
        fields = [f"{pad}cfg Config"] + [
            f"{pad}{camel(dependency_words(d))} *{camel(dependency_words(d))}Client"
            for d in self.facts.dependencies
        ]
        setup = [[f"{recv} := &{receiver}{{cfg: cfg}}"]]
        for dep in self.facts.dependencies:
            field, env = camel(dependency_words(dep)), pascal(words(address_setting(self.facts, dep)))
            setup.append(
                [
                    f"{field}, err := new{pascal(dependency_words(dep))}Client(ctx, cfg.{env})",
                    "if err != nil {",
                    f'{pad}return nil, fmt.Errorf("connect {dep.name}: %w", err)',
                    "}",
                    f"{recv}.{field} = {field}",
                ]
            )
        setup.append([f"return {recv}, nil"])
        constructor = (
            f"func new{pascal(words(receiver))}(ctx context.Context, cfg Config) (*{receiver}, error) {{"
        )
        topic = tuple(d.name for d in self.facts.dependencies)
        members = [Member("new", [constructor], setup, ["}"], topic=topic, rank=0)]
        members += [] if self.facts.protocol == "http" else [self.health()]
        if any(n.endpoint.op.protocol == "http" for n in self.named):
            members += self.http_helpers()
        elapsed = [["return float64(time.Since(start).Microseconds()) / 1000"]]
        members.append(
            Member("elapsed", ["func elapsed(start time.Time) float64 {"], elapsed, ["}"], topic=("time",))
        )
        health = (
            ['healthpb "google.golang.org/grpc/health/grpc_health_v1"']
            if self.facts.protocol != "http"
            else []
        )
        head = [
            *self.imports("context", "encoding/json", "fmt", "net/http", "time", *health),
            "",
            f"type {receiver} struct {{",
            *fields,
            "}",
        ]
        name = (
            "handlers.go" if self.facts.protocol == "http" else f"{snake(self.core_words or ['worker'])}.go"
        )
        return Module(name, "core", head=head, members=members, unit=self.unit)

    def health(self) -> Member:
        signature = (
            f"{self.sig} Check(ctx context.Context, req *healthpb.HealthCheckRequest) "
            "(*healthpb.HealthCheckResponse, error) {"
        )
        body = [["return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil"]]
        return Member("Check", [signature], body, ["}"], topic=("health", "check"))

    def http_helpers(self) -> list[Member]:
        pad = self.pad
        encode = [
            "if err := json.NewEncoder(w).Encode(v); err != nil {",
            f'{pad}log.Warnf("write response: %v", err)',
            "}",
        ]
        headers = ['w.Header().Set("Content-Type", "application/json")', "w.WriteHeader(status)"]
        members = [
            Member(
                "writeJSON",
                ["func writeJSON(w http.ResponseWriter, status int, v any) {"],
                [headers, encode],
                ["}"],
                topic=("response", "json"),
            )
        ]
        for item in (n for n in self.named if n.endpoint.op.protocol == "http"):
            view = pascal(item.words)
            steps = [w for s in item.endpoint.steps for w in op_words(s.op)]
            signature = (
                f"{self.sig} render{view}(w http.ResponseWriter, r *http.Request, data map[string]any) {{"
            )
            body = [
                ['data["session"] = sessionID(r)', 'data["request_id"] = r.Header.Get("X-Request-Id")'],
                ["writeJSON(w, http.StatusOK, data)"],
            ]
            members.append(
                Member(f"render{view}", [signature], body, ["}"], topic=(*item.verb_words, *steps), rank=2)
            )
        cookie = ['if c, err := r.Cookie("session-id"); err == nil {', f"{pad}return c.Value", "}"]
        members.append(
            Member("sessionID", ["func sessionID(r *http.Request) string {"], [cookie, ['return ""']], ["}"])
        )
        return members

    def endpoint(self, item: Named) -> Module:
        op, taken = item.endpoint.op, {"ctx", "req", "err", "start"}
        if op.protocol == "grpc":
            params = f"(ctx context.Context, req *pb.{op.verb}Request) (*pb.{op.verb}Response, error) {{"
            failing = ['return nil, status.Errorf(codes.Internal, "%WHAT%: %v", err)']
            calls = [self.call(s, failing, taken) for s in item.endpoint.steps]
            done = [
                f'log.WithField("ms", elapsed(start)).Debug("{op.verb} served")',
                f"return &pb.{op.verb}Response{{}}, nil",
            ]
            body = [["start := time.Now()"], *calls, done]
            grpc = (
                "google.golang.org/grpc/codes",
                "google.golang.org/grpc/status",
                f'pb "{self.mod}/genproto"',
            )
            head = self.imports("context", "time", *grpc)
            name = f"handle{op.verb}"
        else:
            params = "(w http.ResponseWriter, r *http.Request) {"
            failing = ['http.Error(w, "%WHAT% failed", http.StatusInternalServerError)', "return"]
            calls = [self.call(s, failing, taken) for s in item.endpoint.steps]
            render = f"{self.recv}.render{pascal(item.words)}(w, r, map[string]any{{}})"
            done = [f'log.WithField("ms", elapsed(start)).Debug({quoted(op.text)})', render]
            body = [["ctx := r.Context()", "start := time.Now()"], *calls, done]
            head = self.imports("net/http", "time")
            name = f"handle{pascal(item.verb_words)}"
        member = Member(
            name, [f"{self.sig} {name}{params}"], body, ["}"], topic=tuple(item.verb_words), rank=2
        )
        return Module(f"{snake(item.words)}.go", "endpoint", op.text, head, [member], unit=self.unit)

    def job(self, job: Job, parts: list[str]) -> Module:
        pad, taken = self.pad, {"ctx", "err"}
        ticker = [
            f"ticker := time.NewTicker(time.Duration(float64(time.Second) / {job.rate_per_second}))",
            "defer ticker.Stop()",
        ]
        select = [
            "for {",
            f"{pad}select {{",
            f"{pad}case <-ctx.Done():",
            f"{pad * 2}return",
            f"{pad}case <-ticker.C:",
            f"{pad * 2}if err := {self.recv}.process{pascal(parts)}(ctx); err != nil {{",
            f'{pad * 3}log.Warnf("{" ".join(parts)}: %v", err)',
            f"{pad * 2}}}",
            f"{pad}}}",
            "}",
        ]
        body = [self.call(s, ["return err"], taken) for s in job.steps] + [["return nil"]]
        members = [
            Member(
                "run",
                [f"{self.sig} run{pascal(parts)}(ctx context.Context) {{"],
                [ticker, select],
                ["}"],
                rank=0,
            ),
            Member(
                "process",
                [f"{self.sig} process{pascal(parts)}(ctx context.Context) error {{"],
                body,
                ["}"],
                topic=tuple(words(job.name)),
                rank=2,
            ),
        ]
        return Module(
            f"{snake(parts)}.go", "job", job.name, self.imports("context", "time"), members, unit=self.unit
        )

    def image(self) -> Module:
        name = self.facts.name
        lines = [
            "FROM golang:1.22-alpine AS builder",
            "WORKDIR /src",
            "COPY . .",
            f"RUN go build -o /{name} .",
            "",
            "FROM alpine:3.20",
            f"COPY --from=builder /{name} /{name}",
            *([f"EXPOSE {self.facts.port}"] if self.facts.port else []),
            f'ENTRYPOINT ["/{name}"]',
        ]
        return Module("Dockerfile", "image", head=lines)


def go_modules(facts: Facts, unit: int) -> list[Module]:
    return Go(facts, unit).modules()
