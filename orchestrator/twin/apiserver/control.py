"""The twin's own HTTP routes beside the Kubernetes API: advance the stepped clock, read its status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from orchestrator.twin.boot import Twin

# One call may move the world at most a day: longer asks are almost certainly a unit mistake.
MAX_ADVANCE_SECONDS = 86_400.0


class AdvanceRequest(BaseModel):
    seconds: float = Field(ge=0, le=MAX_ADVANCE_SECONDS)


def control_router(twin: Twin) -> APIRouter:
    routes = APIRouter(prefix="/twin/v1")

    @routes.post("/advance")
    def advance(body: AdvanceRequest) -> dict[str, Any]:
        if twin.mode != "stepped":
            raise HTTPException(status_code=409, detail="the twin runs on the realtime clock")
        now = twin.advance(body.seconds)
        return {"now": now, "app": twin.app, "namespace": twin.namespace}

    @routes.get("/status")
    def status() -> dict[str, Any]:
        with twin.cluster.lock:
            return {
                "app": twin.app,
                "namespace": twin.namespace,
                "seed": twin.seed,
                "clock": twin.mode,
                "now": twin.now,
                "requests": twin.requests,
                "scrapes": twin.telemetry.scrapes,
                "pushed_samples": twin.telemetry.pushed_samples,
                "metrics_digest": twin.telemetry.digest,
            }

    return routes
