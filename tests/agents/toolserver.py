"""A tiny MCP tools server (official SDK, streamable HTTP) with a bearer token, for agent tests.

It exposes a few tools with the marathon's names and arguments and records every call it receives, so a
test can check which tools an agent called with which arguments.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.agents.serving import serving


@dataclass
class ToolLog:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def build_app(token: str, log: ToolLog, alerts: list[dict[str, Any]]) -> Starlette:
    server: MCPServer = MCPServer("test-tools")

    @server.tool(description="List the alerts of the application.")
    def get_alerts(status: str = "all") -> dict[str, Any]:
        log.calls.append(("get_alerts", {"status": status}))
        return {"ok": True, "result": [a for a in alerts if status == "all" or a["status"] == status]}

    @server.tool(description="Restart every pod of a service.")
    def restart_service(incident_id: str, service: str) -> dict[str, Any]:
        log.calls.append(("restart_service", {"incident_id": incident_id, "service": service}))
        if service == "forbidden":
            return {"ok": False, "error": {"type": "PolicyDenied", "message": "not a workload"}}
        return {"ok": True, "result": {"restarted": service}}

    @server.tool(description="File or update an incident.")
    def incident_report(
        incident_id: str, alert_ids: list[str], culprit_services: list[str], artifact: str,
        status: str = "open", notes: str = "",
    ) -> dict[str, Any]:
        log.calls.append(("incident_report", {
            "incident_id": incident_id, "alert_ids": alert_ids, "culprit_services": culprit_services,
            "artifact": artifact, "status": status,
        }))
        return {"ok": True, "result": {"incident_id": incident_id}}

    @server.tool(description="Roll a service back to its previous revision.")
    def rollback_service(incident_id: str, service: str) -> dict[str, Any]:
        log.calls.append(("rollback_service", {"incident_id": incident_id, "service": service}))
        return {"ok": True, "result": {"rolled_back": service}}

    @server.tool(description="Scale a service.")
    def scale_service(incident_id: str, service: str, replicas: int) -> dict[str, Any]:
        args = {"incident_id": incident_id, "service": service, "replicas": replicas}
        log.calls.append(("scale_service", args))
        return {"ok": True, "result": {"replicas": replicas}}

    @server.tool(description="List resources of a kind.")
    def get_resources(kind: str, name: str | None = None) -> dict[str, Any]:
        log.calls.append(("get_resources", {"kind": kind, "name": name}))
        return {"ok": True, "result": [{"name": name, "spec": {"replicas": 1}}]}

    app = server.streamable_http_app(stateless_http=True, json_response=True)

    async def check_token(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)

    app.add_middleware(BaseHTTPMiddleware, dispatch=check_token)
    return app


@contextlib.contextmanager
def tools_server(token: str, alerts: list[dict[str, Any]] | None = None) -> Iterator[tuple[str, ToolLog]]:
    """Yield (MCP URL, call log) while the server runs."""
    log = ToolLog()
    with serving(build_app(token, log, alerts or [])) as base:
        yield f"{base}/mcp", log
