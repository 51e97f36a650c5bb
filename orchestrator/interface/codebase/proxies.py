"""The deployed configuration of proxies: nginx and Envoy, a file per route and per upstream (pure)."""

from __future__ import annotations

import re

from orchestrator.interface.codebase.facts import Facts, Op
from orchestrator.interface.codebase.modules import Module
from orchestrator.interface.codebase.names import snake, words
from orchestrator.interface.codebase.parts import (
    named_endpoints,
)
from orchestrator.interface.codebase.scaffold import quote


def image(facts: Facts, base: str, config: str, target: str) -> Module:
    lines = [f"FROM {base}", f"COPY {config} {target}", *([f"EXPOSE {facts.port}"] if facts.port else [])]
    return Module("Dockerfile", "image", head=lines)


def _upstream(facts: Facts, op: Op) -> tuple[str, int | None]:
    endpoint = next(e for e in facts.endpoints if e.op.text == op.text)
    if not endpoint.steps:
        return "", None
    dep = facts.dependency(endpoint.steps[0].callee)
    return dep.name, dep.port


def nginx_modules(facts: Facts, unit: int) -> list[Module]:
    pad = " " * unit
    modules = [
        Module(
            "nginx.conf",
            "main",
            head=[
                "worker_processes auto;",
                "",
                "events {",
                f"{pad}worker_connections 1024;",
                "}",
                "",
                "http {",
                f"{pad}include mime.types;",
                f"{pad}sendfile on;",
                f"{pad}keepalive_timeout 65;",
                f"{pad}log_format main '$remote_addr \"$request\" $status $body_bytes_sent $request_time';",
                f"{pad}access_log /dev/stdout main;",
                "",
                f"{pad}include conf.d/upstreams/*.conf;",
                "",
                f"{pad}server {{",
                f"{pad * 2}listen {facts.port or 80};",
                f"{pad * 2}include conf.d/routes/*.conf;",
                f"{pad}}}",
                "}",
            ],
        ),
        Module(
            "templates/env.conf.template",
            "config",
            head=[
                f"# rendered by envsubst at start-up ({len(facts.settings)} settings)",
                *[f'set ${snake(words(s.env))} "${{{s.env}}}";' for s in facts.settings],
            ],
        ),
    ]
    for named in named_endpoints(facts):
        op = named.endpoint.op
        upstream, _ = _upstream(facts, op)
        match = re.sub(r"\{\w+\}", "[^/]+", op.subject)
        location = f"location ~ ^{match}$ {{" if "{" in op.subject else f"location = {op.subject} {{"
        target = (
            [
                f"{pad}proxy_pass http://{upstream};",
                f"{pad}proxy_set_header Host $host;",
                f"{pad}proxy_set_header X-Request-Id $request_id;",
                f"{pad}proxy_read_timeout 30s;",
            ]
            if upstream
            else [f"{pad}root /usr/share/nginx/html;", f"{pad}expires 1h;", f"{pad}try_files $uri =404;"]
        )
        methods = [f"{pad}limit_except {op.verb} {{", f"{pad * 2}deny all;", f"{pad}}}"]
        modules.append(
            Module(
                f"conf.d/routes/{snake(named.words)}.conf",
                "endpoint",
                op.text,
                head=[location, *methods, *target, "}"],
            )
        )
    for dep in facts.dependencies:
        modules.append(
            Module(
                f"conf.d/upstreams/{dep.name}.conf",
                "client",
                dep.name,
                head=[
                    f"upstream {dep.name} {{",
                    f"{pad}server {dep.name}:{dep.port};",
                    f"{pad}keepalive 16;",
                    "}",
                ],
            )
        )
    modules.append(image(facts, "openresty/openresty:1.25-alpine", ".", "/usr/local/openresty/nginx/conf/"))
    return modules


def envoy_modules(facts: Facts, unit: int) -> list[Module]:
    port = next((s.env for s in facts.settings if s.env == "ENVOY_PORT"), "PORT")
    modules = [
        Module(
            "envoy.tmpl.yaml",
            "main",
            head=[
                "static_resources:",
                "  listeners:",
                "    - name: frontend",
                "      address:",
                f"        socket_address: {{ address: 0.0.0.0, port_value: ${{{port}}} }}",
                "      filter_chains:",
                "        - filters:",
                "            - name: envoy.filters.network.http_connection_manager",
                "              typed_config:",
                '                "@type": '
                "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "                stat_prefix: ingress_http",
                "                route_config:",
                "                  name: local_route",
                "                  virtual_hosts:",
                "                    - name: frontend",
                '                      domains: ["*"]',
                "                      routes: !include routes/*.yaml",
                "  clusters: !include clusters/*.yaml",
                "admin:",
                "  address: { socket_address: { address: 0.0.0.0, port_value: ${ENVOY_ADMIN_PORT} } }",
            ],
        ),
        Module(
            "env.sh",
            "config",
            head=[
                "#!/bin/sh",
                "set -eu",
                "",
                *[f': "${{{s.env}:={s.default or ""}}}"' for s in facts.settings],
                "",
                "envsubst < /etc/envoy/envoy.tmpl.yaml > /etc/envoy/envoy.yaml",
                'exec envoy -c /etc/envoy/envoy.yaml "$@"',
            ],
        ),
    ]
    for named in named_endpoints(facts):
        op = named.endpoint.op
        upstream, _ = _upstream(facts, op)
        prefix = op.subject.split("{", 1)[0]
        modules.append(
            Module(
                f"routes/{snake(named.words)}.yaml",
                "endpoint",
                op.text,
                head=[
                    f'- match: {{ prefix: {quote(prefix)}, headers: [{{ name: ":method", '
                    f"string_match: {{ exact: {op.verb} }} }}] }}",
                    f"  route: {{ cluster: {upstream or 'frontend'}, timeout: 30s }}",
                ],
            )
        )
    for dep in facts.dependencies:
        modules.append(
            Module(
                f"clusters/{dep.name}.yaml",
                "client",
                dep.name,
                head=[
                    f"- name: {dep.name}",
                    "  type: STRICT_DNS",
                    "  lb_policy: ROUND_ROBIN",
                    *(["  http2_protocol_options: {}"] if dep.protocol == "grpc" else []),
                    "  load_assignment:",
                    f"    cluster_name: {dep.name}",
                    "    endpoints:",
                    "      - lb_endpoints:",
                    f"          - endpoint: {{ address: {{ socket_address: {{ "
                    f"address: {dep.name}, port_value: {dep.port} }} }} }}",
                ],
            )
        )
    modules.append(image(facts, "envoyproxy/envoy:v1.30-latest", ".", "/etc/envoy/"))
    return modules
