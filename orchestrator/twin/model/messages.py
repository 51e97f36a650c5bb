"""Every log line the twin's services write, per cause and per language idiom, in one table.

Catalog authors pick an entry's ``log.message`` from these templates; the model fills the placeholders
from the cluster state it reads. Code-fault builds log their catalog entry's own message instead. What a
caller says it was doing when a call fails is the app's own wording, kept in its topology (``call_context``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

# Language idiom families; ``idiom`` maps a topology ``language`` string onto one of them.
IDIOMS: tuple[str, ...] = ("go", "dotnet", "java", "node", "python", "rust", "ruby", "php", "cpp", "proxy")


def idiom(language: str) -> str:
    """The idiom family of a topology ``language`` string (no side effects)."""
    text = language.lower()
    checks = (
        ("c#", "dotnet"), (".net", "dotnet"), ("c++", "cpp"), ("kotlin", "java"), ("java", "java"),
        ("typescript", "node"), ("node", "node"), ("javascript", "node"), ("python", "python"),
        ("rust", "rust"), ("ruby", "ruby"), ("php", "php"), ("envoy", "proxy"), ("nginx", "proxy"),
    )  # fmt: skip
    for needle, family in checks:
        if needle in text:
            return family
    return "go"


# Causes: what went wrong, as the caller (or the service itself) sees it.
CAUSES: tuple[str, ...] = (
    "connection_refused", "dns_failure", "timeout", "upstream_error", "no_endpoints", "unreachable",
    "datastore_error", "http_error", "auth_failed",
    "missing_config", "startup", "shutdown", "request_ok", "slow_request", "http_abort", "datastore_slow",
    "connection_reset", "memory_pressure",
)  # fmt: skip

_GO = {
    "connection_refused": "{context}: rpc error: code = Unavailable desc = connection "
    'error: desc = "transport: Error while dialing: dial tcp {ip}:{port}: connect: connection refused"',
    "dns_failure": "{context}: rpc error: code = Unavailable desc = name resolver error: produced "
    "zero addresses: lookup {host} on 10.96.0.10:53: no such host",
    "timeout": "{context}: rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    "upstream_error": "{context}: rpc error: code = {code} desc = {detail}",
    "no_endpoints": "{context}: rpc error: code = Unavailable desc = connection error: desc = "
    '"transport: Error while dialing: dial tcp {ip}:{port}: connect: connection refused"',
    "unreachable": "{context}: rpc error: code = Unavailable desc = connection error: desc = "
    '"transport: Error while dialing: dial tcp {ip}:{port}: i/o timeout"',
    "datastore_error": "{context}: {detail}",
    "auth_failed": "failed to authenticate to {datastore}: {auth_detail}",
    "missing_config": 'panic: environment variable "{var}" not set',
    "startup": "starting grpc server at :{port}",
    "shutdown": "received signal terminated, shutting down",
    "request_ok": "request complete method={op} status=OK duration={ms}ms",
    "slow_request": "slow request method={op} duration={ms}ms",
    "http_abort": "{context}: rpc error: code = Unavailable desc = upstream aborted the request",
    "datastore_slow": "query to {datastore} took {ms}ms",
    "connection_reset": "{context}: rpc error: code = Unavailable desc = error reading "
    "from server: read tcp {self_ip}:{ephemeral}->{ip}:{port}: read: connection reset by peer",
    "memory_pressure": "memory usage high: heap in use {mib}MiB",
    "http_error": "{context}: unexpected HTTP status {status} calling {op} on {host}",
}
_DOTNET = {
    "connection_refused": 'Grpc.Core.RpcException: Status(StatusCode="Unavailable", '
    'Detail="Error connecting to subchannel.", '
    'DebugException="System.Net.Sockets.SocketException: Connection refused ({ip}:{port})")',
    "dns_failure": "System.Net.Sockets.SocketException (00000001, 11): Name or service not known ({host})",
    "timeout": 'Grpc.Core.RpcException: Status(StatusCode="DeadlineExceeded", Detail="Deadline Exceeded")',
    "upstream_error": 'Grpc.Core.RpcException: Status(StatusCode="{code}", Detail="{detail}") calling {op}',
    "auth_failed": "StackExchange.Redis.RedisConnectionException: No connection is available to service this "
    "operation: AuthenticationFailure on {addr}; {auth_detail}",
    "missing_config": "Unhandled exception. System.ArgumentNullException: Value cannot be null. "
    "(Parameter '{var}')",
    "startup": "info: Microsoft.Hosting.Lifetime[14] Now listening on: http://[::]:{port}",
    "shutdown": "info: Microsoft.Hosting.Lifetime[0] Application is shutting down...",
    "request_ok": "info: Microsoft.AspNetCore.Hosting.Diagnostics[2] Request finished HTTP/2 POST "
    "/{op} - 200 - application/grpc {ms}ms",
    "slow_request": "warn: Grpc.AspNetCore.Server.ServerCallHandler[8] Request /{op} took {ms}ms",
    "http_abort": 'Grpc.Core.RpcException: Status(StatusCode="Unavailable", Detail="upstream aborted")',
    "datastore_slow": "warn: StackExchange.Redis[0] Timeout awaiting response (outbound=0KiB, inbound=0KiB, "
    "{ms}ms elapsed), command=HGET, active: HGET, next: HGET, inst: 0, qu: 0, qs: 1 ({addr})",
    "connection_reset": "System.IO.IOException: Unable to read data from the transport connection: "
    "Connection reset by peer ({ip}:{port})",
    "memory_pressure": "warn: System.GC[0] Gen2 collection under memory pressure: {mib}MiB in use",
    "http_error": "System.Net.Http.HttpRequestException: Response status code does not indicate success: "
    "{status} calling {op}",
}
_DOTNET_REDIS = {
    "unreachable": "StackExchange.Redis.RedisConnectionException: No connection is active/available to "
    "service this operation: HGET; SocketFailure on {addr}/Interactive, Idle/Faulted, last: GET, origin: "
    "ReadFromPipe, outstanding: 1, last-read: 5s ago, last-write: 5s ago, keep-alive: 60s",
    "datastore_error": "StackExchange.Redis.RedisServerException: {detail}",
    "auth_failed": "StackExchange.Redis.RedisConnectionException: It was not possible to connect to the "
    "redis server(s). There was an authentication failure; check that passwords (or client certificates) "
    "are configured correctly: (RedisServerException) {auth_detail}",
    "connection_refused": "StackExchange.Redis.RedisConnectionException: It was not possible to "
    "connect to the redis server(s). ConnectTimeout; UnableToConnect on {addr}/Interactive, "
    "Initializing/NotStarted, last: NONE, origin: BeginConnectAsync, SocketFailure: Connection refused",
    "dns_failure": "StackExchange.Redis.RedisConnectionException: It was not possible to connect to "
    "the redis server(s). UnableToResolvePhysicalConnection on {addr}: No such host is known ({host})",
    "no_endpoints": "StackExchange.Redis.RedisConnectionException: No connection is active/available to "
    "service this operation: HGET; It was not possible to connect to the redis server(s). UnableToConnect "
    "on {addr}/Interactive, Initializing/NotStarted, last: NONE, origin: BeginConnectAsync, SocketFailure: "
    "Connection refused",
    "timeout": "StackExchange.Redis.RedisTimeoutException: Timeout performing HGETALL (5000ms), inst: 0, "
    "qu: 0, qs: 1, aw: False, rs: ReadAsync, ws: Idle, in: 0, serverEndpoint: {addr}",
}
_JAVA = {
    "connection_refused": "io.grpc.StatusRuntimeException: UNAVAILABLE: io exception: Connection refused: "
    "{host}/{ip}:{port}",
    "dns_failure": "java.net.UnknownHostException: {host}: Name or service not known",
    "timeout": "java.net.SocketTimeoutException: Read timed out calling {op}",
    "upstream_error": "org.springframework.web.client.HttpServerErrorException$InternalServerError: "
    "500 Internal Server Error calling {op}: {detail}",
    "auth_failed": "java.sql.SQLException: Access denied for user '{user}'@'{self_ip}' (using password: YES)",
    "missing_config": "org.springframework.beans.factory.BeanCreationException: Could not resolve "
    "placeholder '{var}' in value \"${{{var}}}\"",
    "startup": "INFO  o.s.b.w.embedded.tomcat.TomcatWebServer - Tomcat started on port(s): {port} (http)",
    "shutdown": "INFO  o.s.b.w.embedded.tomcat.GracefulShutdown - Commencing graceful shutdown",
    "request_ok": "INFO  [{op}] completed in {ms} ms",
    "slow_request": "WARN  [{op}] slow request: {ms} ms",
    "http_abort": "org.springframework.web.client.ResourceAccessException: I/O error on POST request for "
    '"http://{host}:{port}/{op}": Unexpected end of file from server',
    "datastore_slow": "WARN  com.zaxxer.hikari.pool.ProxyConnection - slow query on {datastore}: {ms} ms",
    "connection_reset": "java.net.SocketException: Connection reset calling {host}:{port}",
    "memory_pressure": "WARN  GC overhead: heap usage {mib}MiB",
    "http_error": "org.springframework.web.client.HttpServerErrorException: {status} calling {op} on {host}",
}
_NODE = {
    "connection_refused": "Error: 14 UNAVAILABLE: No connection established. Last error: connect "
    "ECONNREFUSED {ip}:{port}",
    "dns_failure": "Error: 14 UNAVAILABLE: Name resolution failed for target dns:{host}:{port}",
    "timeout": "Error: 4 DEADLINE_EXCEEDED: Deadline exceeded calling {op}",
    "upstream_error": "Error: 13 INTERNAL: {detail} ({op})",
    "auth_failed": 'error: password authentication failed for user "{user}"',
    "missing_config": "Error: missing required environment variable {var}",
    "startup": '{{"severity":"info","message":"Listening on {port}"}}',
    "shutdown": '{{"severity":"info","message":"SIGTERM received, closing server"}}',
    "request_ok": '{{"severity":"info","message":"request handled","method":"{op}"}}',
    "slow_request": '{{"severity":"warn","message":"slow request","method":"{op}","ms":{ms}}}',
    "http_abort": "Error: socket hang up calling {op}",
    "datastore_slow": '{{"severity":"warn","message":"slow {datastore} query","ms":{ms}}}',
    "connection_reset": "Error: read ECONNRESET calling {op}",
    "memory_pressure": '{{"severity":"warn","message":"heap used {mib}MiB"}}',
    "http_error": "Error: Request failed with status code {status} ({op})",
}
_PYTHON = {
    "connection_refused": "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with: "
    'status = StatusCode.UNAVAILABLE details = "failed to connect to all addresses; last error: '
    'UNKNOWN: ipv4:{ip}:{port}: Failed to connect to remote host: Connection refused">',
    "dns_failure": 'grpc._channel._InactiveRpcError: status = StatusCode.UNAVAILABLE details = "DNS '
    'resolution failed for {host}:{port}: C-ares status is not ARES_SUCCESS qtype=A name={host}"',
    "timeout": "grpc._channel._InactiveRpcError: status = StatusCode.DEADLINE_EXCEEDED details = "
    '"Deadline Exceeded" ({op})',
    "upstream_error": "grpc._channel._InactiveRpcError: status = StatusCode.{code_upper} details = "
    '"{detail}" ({op})',
    "auth_failed": "pymysql.err.OperationalError: (1045, \"Access denied for user '{user}'@'{self_ip}' "
    '(using password: YES)")',
    "missing_config": "Exception: {var} environment variable not set",
    "startup": "INFO:server:listening on port: {port}",
    "shutdown": "INFO:server:received SIGTERM, stopping",
    "request_ok": "INFO:server:[{op}] request handled in {ms}ms",
    "slow_request": "WARNING:server:[{op}] slow request: {ms}ms",
    "http_abort": "requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote "
    "end closed connection without response')) calling {op}",
    "datastore_slow": "WARNING:server:{datastore} query took {ms}ms",
    "connection_reset": "ConnectionResetError: [Errno 104] Connection reset by peer ({op})",
    "memory_pressure": "WARNING:server:memory usage {mib}MiB",
    "http_error": "Error code: {status} - {op} on {host} failed",
}
_RUST = {
    "connection_refused": "ERROR shipping: request to {host}:{port} failed: error trying to connect: tcp "
    "connect error: Connection refused (os error 111)",
    "dns_failure": "ERROR shipping: request to {host} failed: error trying to connect: dns error: failed to "
    "lookup address information: Name or service not known",
    "timeout": "ERROR shipping: request to {host}:{port} failed: operation timed out",
    "upstream_error": "ERROR shipping: {op} returned {detail}",
    "missing_config": "thread 'main' panicked at src/main.rs: {var} must be set: NotPresent",
    "startup": "INFO shipping: listening on 0.0.0.0:{port}",
    "request_ok": 'INFO actix_web::middleware::logger: "{op}" 200 {ms}ms',
}
_RUBY = {
    "connection_refused": "Errno::ECONNREFUSED: Failed to open TCP connection to {host}:{port} "
    '(Connection refused - connect(2) for "{host}" port {port})',
    "dns_failure": "SocketError: Failed to open TCP connection to {host}:{port} (getaddrinfo: Name or "
    "service not known)",
    "timeout": "Net::ReadTimeout: Net::ReadTimeout with #<TCPSocket:(closed)> ({op})",
    "missing_config": 'KeyError: key not found: "{var}"',
    "startup": "== Sinatra has taken the stage on {port} for production with backup from Puma",
    "request_ok": "INFO -- : {op} 200 {ms}ms",
}
_PHP = {
    "connection_refused": "PHP Warning: file_get_contents(http://{host}:{port}/): Failed to open stream: "
    "Connection refused",
    "dns_failure": "PHP Warning: php_network_getaddresses: getaddrinfo for {host} failed: Name or service "
    "not known",
    "missing_config": "PHP Fatal error: Uncaught RuntimeException: environment variable {var} is not set",
    "startup": "[info] Slim application listening on 0.0.0.0:{port}",
    "request_ok": "[info] {op} 200 {ms}ms",
}
_CPP = {
    "connection_refused": "E grpc: failed to connect to all addresses; last error: UNKNOWN: "
    "ipv4:{ip}:{port}: Connection refused",
    "missing_config": "terminate called after throwing an instance of 'std::logic_error' what(): {var} "
    "not set",
    "startup": "Currency Server listening on 0.0.0.0:{port}",
    "request_ok": "I {op} handled in {ms}ms",
}
_PROXY = {
    "connection_refused": "upstream connect error or disconnect/reset before headers. reset reason: "
    "remote connection failure, transport failure reason: delayed connect error: 111 ({host}:{port})",
    "dns_failure": "upstream connect error or disconnect/reset before headers. reset reason: connection "
    "failure, transport failure reason: DNS resolution failed for {host}",
    "timeout": "upstream request timeout ({op})",
    "no_endpoints": "no healthy upstream ({host})",
    "startup": "starting main dispatch loop on port {port}",
    "request_ok": '"GET {op} HTTP/1.1" 200 - {ms}ms',
}

TEMPLATES: dict[str, dict[str, str]] = {
    "go": _GO, "dotnet": _DOTNET, "java": _JAVA, "node": _NODE, "python": _PYTHON, "rust": _RUST,
    "ruby": _RUBY, "php": _PHP, "cpp": _CPP, "proxy": _PROXY,
}  # fmt: skip

# Datastore-specific client idioms: a .NET Redis client logs StackExchange.Redis exceptions, not gRPC ones.
DATASTORE_TEMPLATES: dict[tuple[str, str], dict[str, str]] = {
    ("dotnet", "redis"): _DOTNET_REDIS,
    ("dotnet", "valkey"): _DOTNET_REDIS,
}

# What each datastore answers to a wrong credential (filled into ``auth_detail``).
AUTH_DETAILS: dict[str, str] = {
    "redis": "WRONGPASS invalid username-password pair or user is disabled.",
    "redis-password": "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?",
    "valkey": "WRONGPASS invalid username-password pair or user is disabled.",
    "valkey-password": "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?",
    "redis-noauth": "NOAUTH Authentication required.",
    "valkey-noauth": "NOAUTH Authentication required.",
    "mysql": "Access denied for user (using password: YES)",
    "postgresql": "FATAL: password authentication failed for user",
    "mongodb": "Authentication failed.",
    "rabbitmq": "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN",
    "kafka": "SaslAuthenticationException: Authentication failed: Invalid username or password",
    "nacos": "user not found!",
}

# How a client library words a server's refusal when it does not pass the reply on as it came: a
# StackExchange.Redis connection that never sent AUTH reports the NOAUTH reply in its own words.
CLIENT_AUTH_DETAILS: dict[tuple[str, str], str] = {
    ("dotnet", "redis-noauth"): "NOAUTH Returned - connection has not yet authenticated",
    ("dotnet", "valkey-noauth"): "NOAUTH Returned - connection has not yet authenticated",
}

# The HTTP status a failed HTTP call carries for each gRPC-style status code of the model.
HTTP_STATUS: dict[str, str] = {
    "Internal": "500", "Unavailable": "503", "ResourceExhausted": "429", "NotFound": "404",
    "InvalidArgument": "400", "FailedPrecondition": "400", "DeadlineExceeded": "504", "Unimplemented": "404",
}  # fmt: skip


def is_http(op: str) -> bool:
    """An HTTP operation is named ``METHOD /path``; anything else is an RPC method."""
    method, _, path = op.partition(" ")
    return method.isupper() and path.startswith("/")


# What a datastore answers while its disk fails (IOChaos fault), filled into ``detail``.
DATASTORE_ERRORS: dict[str, str] = {
    "redis": "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to "
    "disk. Commands that may modify the data set are disabled, because this instance is configured to report "
    "errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option).",
    "mysql": "Error 1030 (HY000): Got error 5 - 'Input/output error' from storage engine",
    "postgresql": 'ERROR: could not read block 0 in file "base/16384/16385": Input/output error',
    "mongodb": "WiredTiger error (5) [Input/output error]: __posix_file_read",
    "kafka": "KafkaStorageException: Disk error when trying to access log file on the disk.",
    "rabbitmq": "NOT_FOUND - home node of durable queue is down or inaccessible (disk I/O error)",
    "nacos": "caused: Input/output error;",
}
DATASTORE_ERRORS["valkey"] = DATASTORE_ERRORS["redis"]

# Levels per cause; info lines are the ordinary background chatter.
LEVELS: dict[str, str] = {
    "startup": "info", "request_ok": "info", "shutdown": "info", "slow_request": "warning",
    "datastore_slow": "warning", "memory_pressure": "warning", "missing_config": "fatal",
}  # fmt: skip


@dataclass(frozen=True)
class Fill:
    """Values for a template's placeholders; unused ones are ignored."""

    op: str = ""
    context: str = ""  # what the caller was doing, in its own words (its topology's ``call_context``)
    status: str = "500"  # HTTP status of an HTTP call's failure
    host: str = ""
    ip: str = ""
    port: str = ""
    addr: str = ""
    var: str = ""
    datastore: str = ""
    user: str = "app"
    code: str = "Internal"
    detail: str = ""
    ms: str = "0"
    mib: str = "0"
    self_ip: str = "10.244.0.1"
    ephemeral: str = "43122"


# A family without its own wording for a cause says it the way it says a close one.
_NEAREST = {
    "http_error": "upstream_error",
    "no_endpoints": "connection_refused",
    "unreachable": "timeout",
    "datastore_error": "upstream_error",
}


def template(family: str, cause: str, *, datastore_kind: str | None = None) -> str:
    """The template for ``cause`` in ``family``: datastore idiom first, then the family (its nearest
    cause), then Go's."""
    if datastore_kind is not None:
        special = DATASTORE_TEMPLATES.get((family, datastore_kind), {})
        if cause in special:
            return special[cause]
    table = TEMPLATES.get(family, _GO)
    return table.get(cause) or table.get(_NEAREST.get(cause, cause)) or _GO[cause]


_CALL_CAUSES = frozenset({
    "connection_refused", "dns_failure", "timeout", "upstream_error", "no_endpoints", "unreachable",
    "http_abort", "connection_reset", "datastore_error", "http_error",
})  # fmt: skip


def render(
    family: str, cause: str, fill: Fill, *, datastore_kind: str | None = None, auth_variant: str | None = None
) -> str:
    """One log message (without timestamp and level) for ``cause`` (no side effects)."""
    values = {f.name: getattr(fill, f.name) for f in fields(fill)}
    values["context"] = fill.context or f"failed to call {fill.op}"
    values["code_upper"] = fill.code.upper()
    reply = auth_variant or datastore_kind or ""
    values["auth_detail"] = CLIENT_AUTH_DETAILS.get(
        (family, reply), AUTH_DETAILS.get(reply, "authentication failed")
    )
    text = template(family, cause, datastore_kind=datastore_kind).format(**values)
    if fill.context and family != "go" and cause in _CALL_CAUSES:
        return f"{fill.context}: {text}"
    return text


def level(cause: str) -> str:
    return LEVELS.get(cause, "error")
