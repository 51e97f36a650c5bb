"""The Go modules around a service's handlers: its main function, configuration and dependency clients."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.interface.codebase.facts import Dependency
from orchestrator.interface.codebase.modules import Member, Module
from orchestrator.interface.codebase.names import camel, pascal, snake, words
from orchestrator.interface.codebase.parts import (
    dependency_words,
    named_endpoints,
    op_words,
    port_setting,
    quoted,
)
from orchestrator.interface.codebase.scaffold import job_names

if TYPE_CHECKING:
    from orchestrator.interface.codebase.golang import Go


def main_member(go: Go) -> Member:
    facts, pad, receiver, interface = go.facts, go.pad, go.receiver, go.interface
    port = f"cfg.{pascal(words(port_setting(facts) or 'port'))}"
    body = [
        [
            "ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)",
            "defer stop()",
        ],
        [
            "cfg := loadConfig()",
            f"svc, err := new{pascal(words(receiver))}(ctx, cfg)",
            "if err != nil {",
            f'{pad}log.Fatalf("start {facts.name}: %v", err)',
            "}",
        ],
    ]
    if facts.protocol == "grpc":
        body.append(
            [
                f'lis, err := net.Listen("tcp", fmt.Sprintf(":%s", {port}))',
                "if err != nil {",
                f'{pad}log.Fatalf("listen: %v", err)',
                "}",
                "srv := grpc.NewServer()",
                f"pb.Register{interface}Server(srv, svc)",
                "go func() {",
                f"{pad}<-ctx.Done()",
                f"{pad}srv.GracefulStop()",
                "}()",
                'log.Infof("listening on %s", lis.Addr())',
                "if err := srv.Serve(lis); err != nil {",
                f'{pad}log.Fatalf("serve: %v", err)',
                "}",
            ]
        )
    routes = [
        f'mux.HandleFunc("{n.endpoint.op.verb} {n.endpoint.op.subject}", svc.handle{pascal(n.verb_words)})'
        for n in named_endpoints(facts)
        if n.endpoint.op.protocol == "http"
    ]
    if facts.protocol == "grpc" and routes:
        body.insert(
            -1,
            [
                "mux := http.NewServeMux()",
                *routes,
                "go func() {",
                f'{pad}if err := http.ListenAndServe(":"+cfg.HttpPort, mux); err != http.ErrServerClosed {{',
                f'{pad * 2}log.Warnf("http: %v", err)',
                f"{pad}}}",
                "}()",
            ],
        )
    elif facts.protocol == "http":
        body.append(
            [
                "mux := http.NewServeMux()",
                *routes,
                f'server := &http.Server{{Addr: fmt.Sprintf(":%s", {port}), Handler: mux}}',
                "go func() {",
                f"{pad}<-ctx.Done()",
                f"{pad}_ = server.Shutdown(context.Background())",
                "}()",
                'log.Infof("listening on %s", server.Addr)',
                "if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {",
                f'{pad}log.Fatalf("serve: %v", err)',
                "}",
            ]
        )
    for _, parts in job_names(facts):
        body.append([f"go svc.run{pascal(parts)}(ctx)"])
    if not facts.protocol:
        body.append(["<-ctx.Done()"])
    return Member("main", ["func main() {"], body, ["}"], topic=("main", "start", "listen"), rank=0)


def config_module(go: Go) -> Module:
    facts, pad, unit = go.facts, go.pad, go.unit
    fields = [f"{pad}{pascal(words(s.env))} string" for s in facts.settings]
    reads = [
        [
            f"{pascal(words(s.env))}: "
            + (
                f"getenv({quoted(s.env)}, {quoted(s.default)}),"
                if s.default is not None
                else f"mustGetenv({quoted(s.env)}),"
            )
        ]
        for s in facts.settings
    ]
    return Module(
        "config.go",
        "config",
        head=["package main", "", 'import "os"', "", "type Config struct {", *fields, "}"],
        unit=unit,
        members=[
            Member(
                "loadConfig",
                ["func loadConfig() Config {", f"{pad}return Config{{"],
                reads,
                [f"{pad}}}", "}"],
                topic=("config", "env"),
                rank=0,
            ),
            Member(
                "getenv",
                ["func getenv(key, fallback string) string {"],
                [["if value, ok := os.LookupEnv(key); ok {", f"{pad}return value", "}"], ["return fallback"]],
                ["}"],
                rank=0,
            ),
            Member(
                "mustGetenv",
                ["func mustGetenv(key string) string {"],
                [
                    [
                        "value, ok := os.LookupEnv(key)",
                        "if !ok {",
                        f'{pad}log.Fatalf("%s is not set", key)',
                        "}",
                    ],
                    ["return value"],
                ],
                ["}"],
                rank=0,
            ),
        ],
    )


def client_module(go: Go, dep: Dependency) -> Module:
    pad, unit, mod = go.pad, go.unit, go.mod
    name = camel(dependency_words(dep))
    kind = {"datastore": "store", "queue": "queue"}.get(dep.kind.value, "client")
    role = "client" if kind == "client" else "store"
    members = [
        Member(
            "new",
            [
                f"func new{pascal(dependency_words(dep))}Client(ctx context.Context, "
                f"addr string) (*{name}Client, error) {{"
            ],
            [
                [
                    f'conn, err := dial(ctx, addr, "{dep.protocol}")',
                    "if err != nil {",
                    f'{pad}return nil, fmt.Errorf("dial %s: %w", addr, err)',
                    "}",
                ],
                [f"return &{name}Client{{conn: conn, timeout: {_timeout(dep)}}}, nil"],
            ],
            ["}"],
            topic=(dep.name,),
            rank=0,
        )
    ]
    for op in dep.ops:
        method = camel(op_words(op))
        if op.protocol == "grpc":
            signature = (
                f"func (c *{name}Client) {method}(ctx context.Context, req "
                f"*pb.{op.verb}Request) (*pb.{op.verb}Response, error) {{"
            )
            call = [f"return pb.New{op.interface}Client(c.conn).{op.verb}(ctx, req)"]
        elif op.protocol == "http":
            signature = f"func (c *{name}Client) {method}(ctx context.Context) (map[string]any, error) {{"
            call = [f"return c.conn.request(ctx, {quoted(op.verb)}, {quoted(op.subject)})"]
        else:
            signature = f"func (c *{name}Client) {method}(ctx context.Context) (any, error) {{"
            call = [f"return c.conn.exec(ctx, {quoted(op.text)})"]
        members.append(
            Member(
                method,
                [signature],
                [["ctx, cancel := context.WithTimeout(ctx, c.timeout)", "defer cancel()"], call],
                ["}"],
                topic=tuple(op_words(op)),
            )
        )
    head = [
        "package main",
        "",
        "import (",
        f'{pad}"context"',
        f'{pad}"fmt"',
        f'{pad}"time"',
        "",
        f'{pad}pb "{mod}/genproto"',
        ")",
        "",
        f"type {name}Client struct {{",
        f"{pad}conn    *conn",
        f"{pad}timeout time.Duration",
        "}",
    ]
    suffix = {"client": "client", "store": "store", "queue": "queue"}[kind]
    return Module(f"{snake(dependency_words(dep))}_{suffix}.go", role, dep.name, head, members, unit=unit)


def _timeout(dep: Dependency) -> str:
    return "2 * time.Second" if dep.kind.value in ("datastore", "queue") else "5 * time.Second"
