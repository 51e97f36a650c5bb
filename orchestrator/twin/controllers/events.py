"""Kubernetes events as a real cluster records them: aggregated by object, reason and message, expiring."""

from __future__ import annotations

from typing import Any

from orchestrator.twin.store import EVENTS, Store
from orchestrator.twin.timefmt import rfc3339

# The API server's default --event-ttl.
EVENT_TTL_S = 3600.0


class EventRecorder:
    """Writes ``v1`` Events into the store; a repeat of the same event bumps ``count`` as the kubelet does."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._latest: dict[tuple[str, str, str, str, str, str], str] = {}
        self._serial = 0

    def record(
        self,
        *,
        involved: dict[str, Any],
        reason: str,
        message: str,
        now: float,
        type_: str = "Normal",
        component: str,
        host: str | None = None,
        field_path: str | None = None,
    ) -> None:
        meta = involved["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (namespace, meta.get("uid", ""), field_path or "", reason, message, component)
        existing_name = self._latest.get(key)
        existing = self._store.find(EVENTS, namespace, existing_name) if existing_name else None
        if existing is not None:
            updated = {
                **existing,
                "count": existing.get("count", 1) + 1,
                "lastTimestamp": rfc3339(now),
                "metadata": dict(existing["metadata"]),
            }
            self._store.put(EVENTS, updated, old=existing)
            return
        self._serial += 1
        # Upstream names events <object>.<unix nanoseconds in hex>; simulated time plus a serial stays unique.
        name = f"{meta['name']}.{int(now * 1e9) + self._serial:x}"
        involved_ref: dict[str, Any] = {
            "kind": involved.get("kind"),
            "namespace": namespace,
            "name": meta["name"],
            "uid": meta.get("uid"),
            "apiVersion": involved.get("apiVersion"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        if field_path:
            involved_ref["fieldPath"] = field_path
        source: dict[str, str] = {"component": component}
        if host:
            source["host"] = host
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved_ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
            "type": type_,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        self._store.create(EVENTS, event, namespace=namespace)
        self._latest[key] = name

    def expire(self, now: float) -> None:
        """Delete events whose last occurrence is older than the TTL."""
        cutoff = rfc3339(now - EVENT_TTL_S)
        stale = [e for e in self._store.values(EVENTS) if (e.get("lastTimestamp") or "") < cutoff]
        for event in stale:
            self._store.delete(EVENTS, event["metadata"]["namespace"], event["metadata"]["name"])
        if stale:
            alive = {(e["metadata"]["namespace"], e["metadata"]["name"]) for e in self._store.values(EVENTS)}
            self._latest = {k: v for k, v in self._latest.items() if (k[0], v) in alive}
