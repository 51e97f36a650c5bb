"""The deployed configuration of datastores and queues: server settings, a file per table or topic (pure)."""

from __future__ import annotations

from orchestrator.interface.codebase.facts import Facts, Op
from orchestrator.interface.codebase.modules import Module
from orchestrator.interface.codebase.names import snake, words
from orchestrator.interface.codebase.proxies import image

_IMAGES = {
    "redis": "redis:7-alpine",
    "valkey": "valkey/valkey:8-alpine",
    "mysql": "percona:5.7",
    "postgresql": "postgres:16-alpine",
    "kafka": "apache/kafka:3.7.0",
    "rabbitmq": "rabbitmq:3.13-alpine",
    "nacos": "nacos/nacos-server:v2.3.2",
}


def datastore_modules(facts: Facts, unit: int) -> list[Module]:
    kind = facts.datastore or "redis"
    modules = [_datastore_config(facts, kind)]
    subjects: dict[str, list[Op]] = {}
    for endpoint in facts.endpoints:
        subjects.setdefault(endpoint.op.subject or endpoint.op.verb, []).append(endpoint.op)
    for subject, ops in subjects.items():
        name = snake(words(subject.rsplit(".", 1)[-1])) or "keys"
        if kind in ("mysql", "postgresql"):
            modules.append(
                Module(
                    f"initdb/{name}.sql",
                    "endpoint",
                    subject,
                    head=[
                        f"CREATE TABLE IF NOT EXISTS {subject} (",
                        "    id VARCHAR(36) NOT NULL PRIMARY KEY,",
                        "    payload TEXT,",
                        "    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,",
                        "    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP",
                        ");",
                        *[f"-- used by {op.verb} from callers" for op in ops[:1]],
                    ],
                )
            )
        elif kind in ("kafka", "rabbitmq"):
            modules.append(
                Module(
                    f"topics/{name}.properties",
                    "endpoint",
                    subject,
                    head=[
                        f"name={subject.split()[-1]}",
                        "partitions=1",
                        "replication.factor=1",
                        "retention.ms=604800000",
                    ],
                )
            )
    base = _IMAGES.get(kind, "alpine:3.20")
    modules.append(image(facts, base, modules[0].path, f"/etc/{kind}/{modules[0].path}"))
    return modules


def _datastore_config(facts: Facts, kind: str) -> Module:
    settings = [f"# {s.env} is read from the environment" for s in facts.settings]
    if kind in ("redis", "valkey"):
        lines = [
            f"port {facts.port}",
            "bind 0.0.0.0",
            "protected-mode no",
            "appendonly no",
            'save ""',
            "maxmemory-policy allkeys-lru",
        ]
    elif kind == "mysql":
        lines = [
            "[mysqld]",
            f"port = {facts.port}",
            "bind-address = 0.0.0.0",
            "max_connections = 500",
            "character-set-server = utf8mb4",
            "innodb_buffer_pool_size = 256M",
        ]
    elif kind == "postgresql":
        lines = [
            "listen_addresses = '*'",
            f"port = {facts.port}",
            "max_connections = 100",
            "shared_buffers = 64MB",
        ]
    elif kind == "kafka":
        lines = [
            "process.roles=broker,controller",
            "node.id=1",
            "num.partitions=1",
            "log.retention.hours=24",
            "auto.create.topics.enable=true",
        ]
    elif kind == "rabbitmq":
        lines = [
            f"listeners.tcp.default = {facts.port}",
            "loopback_users.guest = false",
            "vm_memory_high_watermark.relative = 0.6",
        ]
    else:
        lines = [f"server.port={facts.port}", "nacos.naming.empty-service.auto-clean=true"]
    path = {
        "redis": "redis.conf",
        "valkey": "valkey.conf",
        "mysql": "my.cnf",
        "postgresql": "postgresql.conf",
        "kafka": "server.properties",
        "rabbitmq": "rabbitmq.conf",
    }.get(kind, "application.properties")
    return Module(path, "config", head=[*lines, *([""] if settings else []), *settings])
