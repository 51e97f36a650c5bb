"""The read tools: alerts, metrics, logs, traces, topology, resources, events, rollout history, config,
feature flags. Each handler takes the backend and its validated arguments and returns compact JSON.

Results never reveal ground truth: the policy keeps hidden namespaces out of requests, and the handlers
keep them out of answers (namespace lists, metric series).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import requests

from orchestrator.cluster.client import ObjectRef
from orchestrator.cluster.fields import FLAGD_FILE
from orchestrator.errors import InputError, TelemetryError
from orchestrator.interface import args as a
from orchestrator.interface import views
from orchestrator.interface.backend import Backend, current_revision, revisions
from orchestrator.interface.patterns import compile_pattern

Json = dict[str, Any]
MAX_SERIES = 30
MAX_POINTS = 120
MAX_LOG_CHARS = 20_000
TRACE_TIMEOUT_S = 10
_CHAOS_GROUP = "chaos-mesh.org"


def _ns(backend: Backend, args: a.ReadArgs) -> str:
    return args.namespace or backend.namespace


def get_alerts(backend: Backend, args: a.GetAlerts) -> Json:
    now = backend.now_s()
    shown = []
    for alert in backend.alerts():
        firing = alert.ends_at is None
        if args.status == "firing" and not firing or args.status == "resolved" and firing:
            continue
        if args.service is not None and alert.labels.get("service") != args.service:
            continue
        if args.rule is not None and alert.rule != args.rule:
            continue
        if args.namespace is not None and alert.labels.get("namespace") != args.namespace:
            continue
        ended = alert.ends_at
        if args.since_s is not None and ended is not None and ended < now - args.since_s:
            continue
        shown.append(
            {
                "alert_id": alert.alert_id,
                "rule": alert.rule,
                "status": "firing" if firing else "resolved",
                "labels": alert.labels,
                "annotations": alert.annotations,
                "starts_at_s": alert.starts_at,
                "ends_at_s": alert.ends_at,
            }
        )
    return {"now_s": now, "count": len(shown), "alerts": views.compact(shown)}


def finite(value: float) -> float | None:
    """``value``, or None for NaN and infinities (JSON has no spelling for them)."""
    return value if math.isfinite(value) else None


def _series_visible(labels: Mapping[str, str], backend: Backend) -> bool:
    return labels.get("namespace") not in backend.hidden_namespaces


def query_metrics(backend: Backend, args: a.QueryMetrics) -> Json:
    if backend.querier is None:
        raise TelemetryError("no metrics backend is configured for this run")
    now = backend.now_s()
    if args.start_s is None and args.end_s is None:
        samples = [
            s
            for s in backend.querier.instant(args.query, at=backend.epoch(now))
            if _series_visible(s.labels, backend)
        ]
        values = [{"labels": dict(s.labels), "value": finite(s.value)} for s in samples[:MAX_SERIES]]
        note = (
            {"note": f"{len(samples) - MAX_SERIES} more series left out"} if len(samples) > MAX_SERIES else {}
        )
        return {"at_s": now, "series": values, **note}
    end = min(args.end_s if args.end_s is not None else now, now)
    start = args.start_s if args.start_s is not None else end - 3600
    if start > end:
        raise InputError(f"start_s = {start} is after end_s = {end}")
    step = max(args.step_s, (end - start) / MAX_POINTS)
    series = backend.querier.range(args.query, start=backend.epoch(start), end=backend.epoch(end), step=step)
    visible = [s for s in series if _series_visible(s.labels, backend)]
    result: list[Json] = [
        {
            "labels": dict(s.labels),
            "points": [[round(t - backend.origin_epoch_s, 3), finite(v)] for t, v in s.points],
        }
        for s in visible[:MAX_SERIES]
    ]
    out: Json = {"start_s": start, "end_s": end, "step_s": step, "series": result}
    notes = []
    if step != args.step_s:
        notes.append(f"step widened to {step:g}s to keep at most {MAX_POINTS} points per series")
    if len(visible) > MAX_SERIES:
        notes.append(f"{len(visible) - MAX_SERIES} more series left out")
    if notes:
        out["note"] = "; ".join(notes)
    return out


def _main_container(backend: Backend, pod: Json) -> str | None:
    containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
    for owner in backend.topology.service_names:
        if pod["metadata"]["name"].startswith(f"{owner}-") and backend.container_of(owner) in containers:
            return backend.container_of(owner)
    return containers[0] if containers else None


def get_logs(backend: Backend, args: a.GetLogs) -> Json:
    namespace = _ns(backend, args)
    if args.pod is not None:
        pods = [backend.kube.read(ObjectRef("Pod", namespace, args.pod))]
    else:
        assert args.service is not None  # the model requires exactly one of service or pod
        pods = backend.pods_of(args.service, namespace)
    pattern = compile_pattern(args.grep, ignore_case=True) if args.grep else None
    lines: list[str] = []
    for pod in pods[:10]:
        name = pod["metadata"]["name"]
        text = backend.kube.read_log(
            namespace=namespace,
            pod=name,
            container=_main_container(backend, pod),
            tail=args.tail if pattern is None else None,
            since_s=args.since_s,
            previous=args.previous,
        )
        prefix = f"[{name}] " if len(pods) > 1 else ""
        lines += [prefix + line for line in text.splitlines() if pattern is None or pattern.search(line)]
    kept = lines[-args.tail :]
    body = "\n".join(kept)
    out: Json = {
        "pods": [p["metadata"]["name"] for p in pods],
        "lines": len(kept),
        "log": body[-MAX_LOG_CHARS:],
    }
    if len(lines) > len(kept) or len(body) > MAX_LOG_CHARS:
        out["note"] = (
            f"{len(lines)} matching lines; showing the last {len(kept)}, cut to {MAX_LOG_CHARS} characters"
        )
    return out


def _trace_summary(trace: Json, backend: Backend) -> Json:
    processes = {pid: p.get("serviceName", "") for pid, p in trace.get("processes", {}).items()}
    spans = trace.get("spans", [])
    ids = {s["spanID"] for s in spans}
    roots = [s for s in spans if not any(r.get("spanID") in ids for r in s.get("references") or [])]
    root = min(roots or spans, key=lambda s: s["startTime"])
    errors = [
        f"{processes.get(s['processID'], '?')} {s['operationName']}"
        for s in spans
        if any(t.get("key") == "error" and t.get("value") in (True, "true") for t in s.get("tags", []))
    ]
    return {
        "trace_id": trace["traceID"],
        "root": f"{processes.get(root['processID'], '?')} {root['operationName']}",
        "start_s": round(root["startTime"] / 1e6 - backend.origin_epoch_s, 3),
        "duration_ms": round(root["duration"] / 1000, 2),
        "spans": len(spans),
        "services": sorted({processes.get(s["processID"], "?") for s in spans}),
        "errors": errors[:10],
    }


def get_traces(backend: Backend, args: a.GetTraces) -> Json:
    if backend.traces_url is None:
        raise TelemetryError("no trace backend is configured for this run")
    end = backend.now_epoch()
    params: dict[str, str | int] = {
        "service": args.service,
        "start": int((end - args.since_s) * 1e6),
        "end": int(end * 1e6),
        "limit": min(args.limit * 10, 1500) if args.errors_only else args.limit,
    }
    url = f"{backend.traces_url.rstrip('/')}/api/traces"
    try:
        # The twin serves its traces beside its API, with the same certificate and token.
        reach = backend.kube.requests_options(url)
        response = requests.get(url, params=params, timeout=TRACE_TIMEOUT_S, **reach)
        response.raise_for_status()
        data = response.json().get("data") or []
    except (requests.RequestException, ValueError) as exc:
        raise TelemetryError(f"traces of {args.service!r}: the trace backend failed: {exc}") from exc
    summaries = [_trace_summary(t, backend) for t in data if t.get("spans")]
    if args.errors_only:
        summaries = [s for s in summaries if s["errors"]]
    summaries = summaries[: args.limit]
    return {"service": args.service, "count": len(summaries), "traces": summaries}


def get_topology(backend: Backend, args: a.GetTopology) -> Json:
    del args
    topology = backend.topology
    calls: dict[str, set[str]] = {}
    for caller, callee, critical in topology.edges():
        calls.setdefault(caller, set()).add(callee if critical else f"{callee} (non-critical)")
    services = [
        {
            "name": s.name,
            "kind": str(s.kind),
            "language": s.language,
            "ports": [f"{p.name}:{p.exposed_port}/{p.protocol}" for p in s.ports],
            "calls": sorted(calls.get(s.name, set())),
        }
        for s in topology.services
    ]
    return {
        "app": topology.app,
        "namespace": topology.namespace,
        "entry_point": topology.entry_point,
        "load_generator": topology.loadgen,
        "routes": [{"name": r.name, "weight": r.weight} for r in topology.routes],
        "services": services,
    }


def get_resources(backend: Backend, args: a.GetResources) -> Json:
    kind, view = views.VIEWS[args.kind]
    namespace = _ns(backend, args)
    if args.name is not None:
        objs = [backend.kube.read(ObjectRef(kind, namespace, args.name))]
    else:
        objs = backend.kube.list_objects(kind, namespace=namespace)
    if kind == "Namespace":
        objs = [o for o in objs if o["metadata"]["name"] not in backend.hidden_namespaces]
    items = [view(o, backend.age_s) for o in objs]
    return {"kind": args.kind, "count": len(items), "items": views.compact(items)}


def _about_hidden(involved: Json, backend: Backend) -> bool:
    """Whether an event is about an object in a hidden namespace, or about a hidden namespace itself (such
    events live in ``default``, which is open to reads)."""
    if involved.get("namespace") in backend.hidden_namespaces:
        return True
    return involved.get("kind") == "Namespace" and involved.get("name") in backend.hidden_namespaces


def _events(backend: Backend, namespace: str, *, name: str | None, since_s: float) -> list[Json]:
    now = backend.now_s()
    found = []
    for event in backend.kube.list_objects("Event", namespace=namespace):
        involved = event.get("involvedObject", {})
        if name is not None and not str(involved.get("name", "")).startswith(name):
            continue
        if str(involved.get("apiVersion", "")).startswith(_CHAOS_GROUP):
            continue  # the fault tooling's own objects are not part of the system under operation
        if _about_hidden(involved, backend):
            continue
        last = (
            event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp")
        )
        at = backend.schedule_time(last)
        if at is not None and at < now - since_s:
            continue
        found.append(
            {
                "at_s": at,
                "type": event.get("type"),
                "reason": event.get("reason"),
                "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
                "message": views.truncate(str(event.get("message", "")), 300),
                "count": event.get("count", 1),
            }
        )
    found.sort(key=lambda e: (e["at_s"] is None, e["at_s"] or 0.0))
    return found


def get_events(backend: Backend, args: a.GetEvents) -> Json:
    found = _events(backend, _ns(backend, args), name=args.name, since_s=args.since_s)
    out: Json = {"now_s": backend.now_s(), "count": len(found), "events": found[-views.MAX_LIST :]}
    if len(found) > views.MAX_LIST:
        out["note"] = f"showing the latest {views.MAX_LIST} of {len(found)} events"
    return out


def describe(backend: Backend, args: a.Describe) -> Json:
    kind = views.VIEWS[args.kind][0]
    namespace = _ns(backend, args)
    obj = views.described(backend.kube.read(ObjectRef(kind, namespace, args.name)))
    events = (
        [] if kind in ("Node", "Namespace") else _events(backend, namespace, name=args.name, since_s=3600)
    )
    return {"object": views.compact(obj), "events": events[-20:]}


def get_rollout_history(backend: Backend, args: a.GetRolloutHistory) -> Json:
    namespace = _ns(backend, args)
    ref = backend.workload_ref(args.service, namespace)
    workload = backend.kube.read(ref)
    found = revisions(backend, ref, workload)
    view: Callable[[Json, views.Age], Json] = views.replicaset_view
    current: str | None = (workload["metadata"].get("annotations") or {}).get(views.REVISION)
    if ref.kind == "StatefulSet":
        view, current = views.controller_revision_view, str(current_revision(ref, workload, found))
    listed = [view(revision.holder, backend.age_s) for _, revision in sorted(found.items())]
    return {"service": args.service, "current_revision": current, "revisions": listed}


def _env_view(env: list[Json]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for item in env:
        if "value" in item:
            shown[item["name"]] = item["value"]
        elif "valueFrom" in item:
            source = item["valueFrom"]
            ref = source.get("secretKeyRef") or source.get("configMapKeyRef") or source.get("fieldRef") or {}
            origin = (
                "secret"
                if "secretKeyRef" in source
                else "configMap"
                if "configMapKeyRef" in source
                else "field"
            )
            shown[item["name"]] = {
                "from": origin,
                **{k: v for k, v in ref.items() if k in ("name", "key", "fieldPath")},
            }
        else:
            shown[item["name"]] = ""
    return shown


def get_config(backend: Backend, args: a.GetConfig) -> Json:
    deployment = backend.workload(args.service, _ns(backend, args))
    spec = deployment["spec"]["template"]["spec"]
    containers = []
    for container in spec.get("containers", []):
        probes = {
            kind: views.compact({k: v for k, v in container[f"{kind}Probe"].items()})
            for kind in ("readiness", "liveness", "startup")
            if f"{kind}Probe" in container
        }
        containers.append(
            {
                "name": container["name"],
                "image": container.get("image"),
                "env": _env_view(container.get("env") or []),
                "resources": container.get("resources") or {},
                "ports": {
                    p.get("name", str(p["containerPort"])): p["containerPort"]
                    for p in container.get("ports") or []
                },
                "probes": probes,
            }
        )
    return {
        "service": args.service,
        "replicas": deployment["spec"].get("replicas", 1),
        "containers": containers,
    }


def flag_configmap(backend: Backend, namespace: str) -> Json | None:
    """The ConfigMap holding the flag service's flag file, if the application has one."""
    for configmap in backend.kube.list_objects("ConfigMap", namespace=namespace):
        if FLAGD_FILE in (configmap.get("data") or {}):
            return configmap
    return None


def get_feature_flags(backend: Backend, args: a.GetFeatureFlags) -> Json:
    configmap = flag_configmap(backend, _ns(backend, args))
    if configmap is None:
        return {"flags": [], "note": "this application serves no feature flags"}
    document = json.loads(configmap["data"][FLAGD_FILE])
    described = {f.name: f for f in backend.topology.feature_flags}
    flags = []
    for name, flag in sorted(document.get("flags", {}).items()):
        known = described.get(name)
        flags.append(
            {
                "flag": name,
                "variant": flag.get("defaultVariant"),
                "variants": sorted(flag.get("variants", {})),
                "state": flag.get("state", "ENABLED"),
                "affects": known.service if known else None,
                "description": known.description if known else "",
            }
        )
    return {"configmap": configmap["metadata"]["name"], "flags": flags}
