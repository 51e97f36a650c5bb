"""An incident report as the baseline agents file it through the ``incident_report`` tool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.agents.mcpclient import ToolClient


@dataclass(frozen=True)
class Report:
    incident_id: str
    alert_ids: tuple[str, ...]
    culprits: tuple[str, ...]
    artifact: str
    status: str


def file_report(client: ToolClient, item: Report, *, notes: str) -> dict[str, Any]:
    """Send one report; the tool's structured answer comes back (refusals included, not raised)."""
    return client.call(
        "incident_report",
        incident_id=item.incident_id,
        alert_ids=list(item.alert_ids),
        culprit_services=list(item.culprits),
        artifact=item.artifact,
        status=item.status,
        notes=notes,
    )
