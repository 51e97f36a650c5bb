"""``pods/exec`` over WebSocket, in the channel protocols kubectl and the official clients speak.

The twin's containers are simulated, but a command run in one is real: it runs as a busybox-like image would
run it, in a bubblewrap sandbox (Debian's ``bwrap``) of its own, with

- the container's environment as the kubelet builds it: its ``env`` (values, ConfigMap and Secret keys, the
  pod's fields) and ``envFrom``, the service links of the namespace's Services, ``HOSTNAME`` and ``PATH``;
- the container's volume mounts: ConfigMap and Secret volumes as files, ``emptyDir`` as an empty tmpfs;
- the pod's name as its hostname, the system's programs read-only, an empty ``/tmp``, a ``/proc`` of its own
  PID namespace, no network and no capability (as ``nobody`` when the twin runs as root, through
  ``setpriv``, as the agent's sandbox does).

Protocols (``Sec-WebSocket-Protocol``): ``v5.channel.k8s.io`` (stdin can be closed with the CLOSE message),
``v4.channel.k8s.io`` and ``channel.k8s.io``. Each binary (or text) message starts with its channel: 0
stdin, 1 stdout, 2 stderr, 3 the exit status (a ``Status``: ``Success``, or ``Failure`` with reason
``NonZeroExitCode`` and the code as the ``ExitCode`` cause), 4 resize (ignored: no terminal is allocated),
255 CLOSE (v5). A command runs at most ``EXEC_LIMIT_S`` seconds.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from orchestrator.errors import ApiStatusError
from orchestrator.sandboxing import drop_privileges, system_binds
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.resources import BY_PLURAL

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
EXEC_LIMIT_S = 300.0
NOBODY = 65534
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KUBERNETES_SERVICE = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
_PODS = BY_PLURAL[("", "pods")]
_CONFIGMAPS = BY_PLURAL[("", "configmaps")]
_SECRETS = BY_PLURAL[("", "secrets")]
_SERVICES = BY_PLURAL[("", "services")]
_ENV_NAME = re.compile(r"[^A-Z0-9_]")


@dataclass(frozen=True)
class ExecRequest:
    namespace: str
    pod: str
    command: tuple[str, ...]
    container: str = ""
    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False


@dataclass
class Container:
    """What the sandbox is built from: the container's environment, files and hostname."""

    name: str
    hostname: str
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path in the container -> content
    empty_dirs: list[str] = field(default_factory=list)


def _flag(value: str | None, default: bool) -> bool:
    return default if value is None else value.lower() in ("1", "true", "yes")


def exec_request(namespace: str, pod: str, query: Any) -> ExecRequest:
    """The request as the query string gives it (``command`` repeated, one argument each)."""
    command = tuple(query.getlist("command"))
    if not command:
        raise ApiStatusError(400, "BadRequest", "you must specify at least 1 command")
    return ExecRequest(
        namespace=namespace, pod=pod, command=command, container=query.get("container") or "",
        stdin=_flag(query.get("stdin"), False), stdout=_flag(query.get("stdout"), True),
        stderr=_flag(query.get("stderr"), True), tty=_flag(query.get("tty"), False),
    )  # fmt: skip


def _data(obj: Mapping[str, Any] | None, *, secret: bool) -> dict[str, bytes]:
    if obj is None:
        return {}
    found = {k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()} if secret else {}
    for key, value in (obj.get("data") or {}).items():
        found[key] = base64.b64decode(str(value)) if secret else str(value).encode()
    if not secret:
        found.update({k: base64.b64decode(str(v)) for k, v in (obj.get("binaryData") or {}).items()})
    return found


def _field(pod: Mapping[str, Any], path: str) -> str:
    value: Any = pod
    for part in path.split("."):
        match = re.fullmatch(r"(\w+)\['([^']+)'\]", part)
        if match:
            value = ((value or {}).get(match.group(1)) or {}).get(match.group(2))
        else:
            value = (value or {}).get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def container_of(cluster: Cluster, request: ExecRequest) -> Container:
    """The container ``request`` names, as the sandbox needs it; an API error when exec cannot reach it
    (the pod or container does not exist, or the pod is not running). Call under ``cluster.lock``."""
    store, ns = cluster.store, request.namespace
    pod = store.find(_PODS, ns, request.pod)
    if pod is None:
        raise ApiStatusError(
            404, "NotFound", f'pods "{request.pod}" not found', details={"name": request.pod, "kind": "pods"}
        )
    containers = pod.get("spec", {}).get("containers") or []
    name = request.container or (containers[0]["name"] if containers else "")
    spec = next((c for c in containers if c.get("name") == name), None)
    if spec is None:
        raise ApiStatusError(400, "BadRequest", f"container {name} is not valid for pod {request.pod}")
    phase = pod.get("status", {}).get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        raise ApiStatusError(
            400, "BadRequest", f"cannot exec into a container in a completed pod; current phase is {phase}"
        )
    running = {
        s.get("name"): "running" in (s.get("state") or {})
        for s in pod.get("status", {}).get("containerStatuses") or []
    }
    if phase != "Running" or not running.get(name, False):
        raise ApiStatusError(400, "BadRequest", f'container not found ("{name}")')

    def configmap(ref: str) -> dict[str, bytes]:
        return _data(store.find(_CONFIGMAPS, ns, ref), secret=False)

    def secret(ref: str) -> dict[str, bytes]:
        return _data(store.find(_SECRETS, ns, ref), secret=True)

    env: dict[str, str] = {"PATH": PATH, "HOSTNAME": request.pod, "HOME": "/root", **KUBERNETES_SERVICE}
    if pod.get("spec", {}).get("enableServiceLinks", True):
        env.update(_service_links(store.list(_SERVICES, ns)))
    for source in spec.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        if "configMapRef" in source:
            found = configmap(source["configMapRef"].get("name", ""))
        else:
            found = secret((source.get("secretRef") or {}).get("name", ""))
        env.update({prefix + key: value.decode(errors="replace") for key, value in found.items()})
    for item in spec.get("env") or []:
        env[item["name"]] = _env_value(item, pod, configmap, secret)
    container = Container(name=name, hostname=request.pod, env=env)
    volumes = {v.get("name"): v for v in pod.get("spec", {}).get("volumes") or []}
    for mount in spec.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"), {})
        path = str(mount.get("mountPath") or "")
        if not path.startswith("/"):
            continue
        if "emptyDir" in volume:
            container.empty_dirs.append(path)
            continue
        if "configMap" in volume:
            files, items = configmap(volume["configMap"].get("name", "")), volume["configMap"].get("items")
        elif "secret" in volume:
            files, items = secret(volume["secret"].get("secretName", "")), volume["secret"].get("items")
        else:
            continue
        if items:
            files = {i["path"]: files[i["key"]] for i in items if i.get("key") in files}
        if mount.get("subPath"):
            if mount["subPath"] in files:
                container.files[path] = files[mount["subPath"]]
        else:
            container.files.update({f"{path.rstrip('/')}/{key}": value for key, value in files.items()})
    return container


Lookup = Callable[[str], dict[str, bytes]]


def _env_value(item: Mapping[str, Any], pod: Mapping[str, Any], configmap: Lookup, secret: Lookup) -> str:
    if "value" in item or "valueFrom" not in item:
        return str(item.get("value") or "")
    source = item["valueFrom"]
    if "fieldRef" in source:
        return _field(pod, str(source["fieldRef"].get("fieldPath", "")))
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        return configmap(ref.get("name", "")).get(ref.get("key", ""), b"").decode(errors="replace")
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        return secret(ref.get("name", "")).get(ref.get("key", ""), b"").decode(errors="replace")
    return ""


def _service_links(services: list[dict[str, Any]]) -> dict[str, str]:
    """The docker-link-style variables the kubelet sets for each Service of the namespace that has a
    cluster IP (no side effects)."""
    env: dict[str, str] = {}
    for service in services:
        spec = service.get("spec", {})
        ip, ports = spec.get("clusterIP"), spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        name = _ENV_NAME.sub("_", service["metadata"]["name"].upper())
        env[f"{name}_SERVICE_HOST"] = str(ip)
        env[f"{name}_SERVICE_PORT"] = str(ports[0].get("port"))
    return env


@contextlib.contextmanager
def sandbox(container: Container, command: tuple[str, ...]) -> Iterator[list[str]]:
    """The ``bwrap`` command line that runs ``command`` in ``container``'s sandbox; the files it mounts live
    in a temporary directory until the block ends."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise ApiStatusError(500, "InternalError", "exec needs bubblewrap (bwrap), which is not installed")
    with tempfile.TemporaryDirectory(prefix="twin-exec-") as scratch:
        root = Path(scratch)
        as_root = os.geteuid() == 0
        argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv",
                "--hostname", container.hostname, "--proc", "/proc", "--dev", "/dev", "--perms", "1777",
                "--tmpfs", "/tmp", "--dir", "/root", "--chdir", "/", *system_binds()]  # fmt: skip
        if not as_root:  # an unprivileged caller gets a user namespace of its own (and no capability)
            argv += ["--unshare-user", "--cap-drop", "ALL"]
        hosts = f"127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t{container.hostname}\n"
        generated = {"/etc/hostname": f"{container.hostname}\n".encode(), "/etc/hosts": hosts.encode(),
                     **container.files}  # fmt: skip
        # bwrap would make a mount point's missing parents 0700: made first, readable by the container's user.
        parents = {
            str(parent) for path in [*container.files, *container.empty_dirs] for parent in Path(path).parents
        }
        for parent in sorted(parents - {"/", "/etc", "/tmp", "/root", "/usr", "/proc", "/dev"}, key=len):
            argv += ["--perms", "0755", "--dir", parent]
        for index, (path, content) in enumerate(sorted(generated.items())):
            local = root / f"f{index}"
            local.write_bytes(content)
            local.chmod(0o644)  # a volume's files are world-readable by default (defaultMode 0644)
            argv += ["--ro-bind", str(local), path]
        for path in container.empty_dirs:
            argv += ["--perms", "0777", "--tmpfs", path]  # an emptyDir is writable by every user
        for key, value in sorted(container.env.items()):
            argv += ["--setenv", key, value]
        argv += ["--", *drop_privileges(NOBODY)] if as_root else ["--"]  # root: no user namespace
        yield [*argv, *command]


def exit_status(code: int, command: tuple[str, ...]) -> dict[str, Any]:
    """The ``Status`` the error channel carries when a command ends (as the kubelet reports it)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        f"[{' '.join(command)}], exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def failure_status(error: ApiStatusError) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": error.reason,
        "code": error.code,
    }


def check_exec(cluster: Cluster, namespace: str, pod: str, query: Any) -> None:
    """A plain HTTP exec request (no WebSocket upgrade, or SPDY, which the twin does not speak): the same
    refusals as a WebSocket one, else the API server's answer to a request it cannot upgrade."""
    request = exec_request(namespace, pod, query)
    with cluster.lock:
        container_of(cluster, request)
    raise ApiStatusError(400, "BadRequest", "Upgrade request required")


async def refuse(websocket: WebSocket, error: ApiStatusError, protocol: str | None) -> None:
    """Refuse an exec before the upgrade with the error's ``Status`` and code, as the API server does; a
    server without the denial-response extension gets the status on the error channel instead."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        body = {"kind": "Status", "apiVersion": "v1", **failure_status(error)}
        await websocket.send_denial_response(JSONResponse(body, status_code=error.code))
        return
    await websocket.accept(subprotocol=protocol)
    await _send(websocket, ERROR, json.dumps(failure_status(error)).encode())
    await websocket.close()


async def _send(websocket: WebSocket, channel: int, data: bytes) -> None:
    await websocket.send_bytes(bytes([channel]) + data)


async def _pump(stream: asyncio.StreamReader | None, websocket: WebSocket, channel: int | None) -> None:
    """Copy a process's output to a channel (or drop it when the client did not ask for it)."""
    if stream is None:
        return
    while chunk := await stream.read(65536):
        if channel is None:
            continue
        try:
            await _send(websocket, channel, chunk)
        except (WebSocketDisconnect, RuntimeError, ConnectionError):  # the client left: drain, send no more
            channel = None


async def _feed(websocket: WebSocket, process: asyncio.subprocess.Process) -> None:
    """The client's messages: stdin data, v5's CLOSE of stdin; returns when the client goes away."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        raw: bytes = message.get("bytes") or (message.get("text") or "").encode("latin-1")
        if not raw:
            continue
        channel, data = raw[0], raw[1:]
        writer = process.stdin
        if channel == STDIN and writer is not None and not writer.is_closing():
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        elif channel == CLOSE and data[:1] == bytes([STDIN]) and writer is not None:
            writer.close()


async def serve_exec(websocket: WebSocket, cluster: Cluster, namespace: str, pod: str) -> None:
    """One exec session: the command's output on its channels, then its exit status, then the close."""
    offered = list(websocket.scope.get("subprotocols") or [])
    protocol = next((p for p in PROTOCOLS if p in offered), None)
    try:
        request = exec_request(namespace, pod, websocket.query_params)
        with cluster.lock:
            container = container_of(cluster, request)
    except ApiStatusError as error:
        await refuse(websocket, error, protocol)
        return
    await websocket.accept(subprotocol=protocol)
    with sandbox(container, request.command) as argv:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if request.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if request.tty else asyncio.subprocess.PIPE,
        )
        outputs = asyncio.gather(
            _pump(process.stdout, websocket, STDOUT if request.stdout else None),
            _pump(process.stderr, websocket, STDERR if request.stderr else None),
        )
        feeding = asyncio.ensure_future(_feed(websocket, process))
        waiting = asyncio.ensure_future(process.wait())
        try:
            done, _ = await asyncio.wait(
                {feeding, waiting}, timeout=EXEC_LIMIT_S, return_when="FIRST_COMPLETED"
            )
            if waiting not in done:  # the client left, or the time is up
                process.kill()
                await process.wait()
            await outputs
            if feeding not in done:
                code = process.returncode if process.returncode is not None else 1
                code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
                await _send(websocket, ERROR, json.dumps(exit_status(code, request.command)).encode())
                await websocket.close()
        except (WebSocketDisconnect, ConnectionError):
            if process.returncode is None:
                process.kill()
                await process.wait()
        finally:
            feeding.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
                await feeding
