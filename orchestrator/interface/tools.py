"""The registry of agent tools: name, argument model, description, effect tag and handler.

Read handlers return JSON; mutating handlers return ``(JSON, targets)``; the one report tool returns its
acknowledgement (the journal record is written by ``calls.ToolCaller``). The same registry serves the MCP
server and the REST mirror.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from orchestrator.interface import args as a
from orchestrator.interface import mutations as m
from orchestrator.interface import reads as r
from orchestrator.interface.backend import Backend
from orchestrator.interface.sources import SourceError
from orchestrator.vocabulary.artifacts import ARTIFACT_KIND_LIST

Effect = Literal["read", "report", "mutate"]
Json = dict[str, Any]


@dataclass(frozen=True)
class Tool:
    name: str
    args: type[a.Args]
    effect: Effect
    description: str
    handler: Callable[[Backend, Any], Any]

    def schema(self) -> Json:
        return copy.deepcopy(_schema(self.args))  # a copy: the caller may change what it is given

    def listing(self) -> Json:
        return {
            "name": self.name,
            "effect": self.effect,
            "description": self.description,
            "schema": self.schema(),
        }


@cache
def _schema(model: type[a.Args]) -> Json:
    """An argument model's JSON schema, generated once: every MCP session lists the tools."""
    return model.model_json_schema()


def _list_source(backend: Backend, args: a.ListSource) -> Json:
    snapshot = backend.sources.snapshot(args.service, m.current_image(backend, args.service, args.namespace))
    files = [{"path": path, "lines": text.count("\n")} for path, text in sorted(snapshot.files.items())]
    return {"service": args.service, "version": snapshot.tag, "files": files}


def _read_source(backend: Backend, args: a.ReadSource) -> Json:
    snapshot = backend.sources.snapshot(args.service, m.current_image(backend, args.service, args.namespace))
    path = args.path.lstrip("/")
    if path not in snapshot.files:
        known = ", ".join(sorted(snapshot.files))
        raise SourceError(f"{args.service} {snapshot.tag} has no file {path!r}; files: {known}")
    return {"service": args.service, "version": snapshot.tag, "path": path, "content": snapshot.files[path]}


def _incident_report(backend: Backend, args: a.IncidentReportArgs) -> Json:
    return {"incident_id": args.incident_id, "status": args.status, "recorded_at_s": backend.now_s()}


_NS = " Optional `namespace` defaults to the application's namespace."
_INCIDENT = " Name the `incident_id` of the incident this change is meant to resolve."

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "get_alerts",
            a.GetAlerts,
            "read",
            "List the alerts raised so far (firing and resolved), with their ids, rule, labels, "
            "annotations and start/end times in schedule seconds; `now_s` is the current schedule "
            "time. Filter by `status` (firing|resolved|all), `service` label, `rule` name, or "
            "`since_s` (active in the last N seconds).",
            r.get_alerts,
        ),
        Tool(
            "query_metrics",
            a.QueryMetrics,
            "read",
            "Run a PromQL query against the cluster's metrics. Without `start_s`/`end_s` it is an "
            "instant query at the current time; with them (schedule seconds, as alert times) it is a "
            "range query with `step_s` spacing. Series carry a `namespace` label; e.g. sum by "
            "(service_name) "
            '(rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[1m])).',
            r.query_metrics,
        ),
        Tool(
            "get_logs",
            a.GetLogs,
            "read",
            "Read container logs of one `service` (all its pods) or one `pod`: the last `tail` lines "
            "of the last `since_s` seconds, optionally only lines matching `grep`, a regular expression "
            "(RE2 syntax, case-insensitive); `previous` reads the previous (crashed) container "
            "instance." + _NS,
            r.get_logs,
        ),
        Tool(
            "get_traces",
            a.GetTraces,
            "read",
            "Summarise recent distributed traces through `service` from the last `since_s` seconds: "
            "root operation, start (schedule seconds), duration, services touched and the spans that "
            "failed. `errors_only` keeps failed traces only.",
            r.get_traces,
        ),
        Tool(
            "get_topology",
            a.GetTopology,
            "read",
            "Describe the application: its services (kind, language, ports), which services each one "
            "calls (non-critical calls marked), the entry point, the user routes and the load "
            "generator.",
            r.get_topology,
        ),
        Tool(
            "get_resources",
            a.GetResources,
            "read",
            "List Kubernetes objects of one `kind` (pods, deployments, statefulsets, replicasets, "
            "services, endpoints, configmaps, nodes, namespaces) like `kubectl get`, or one object by "
            "`name`: status, readiness, restarts, images, revisions, ages in seconds." + _NS,
            r.get_resources,
        ),
        Tool(
            "describe",
            a.Describe,
            "read",
            "Show one Kubernetes object in full (spec and status) with its recent events, like "
            "`kubectl describe KIND NAME`." + _NS,
            r.describe,
        ),
        Tool(
            "get_events",
            a.GetEvents,
            "read",
            "List Kubernetes events of the last `since_s` seconds (schedule-time stamps), optionally "
            "only for objects whose name starts with `name` (a deployment name also matches its "
            "pods)." + _NS,
            r.get_events,
        ),
        Tool(
            "get_rollout_history",
            a.GetRolloutHistory,
            "read",
            "Show the rollout history of a service's Deployment or StatefulSet: every revision with its "
            "image, change cause, age and replicas, and the current revision (like `kubectl rollout "
            "history`).",
            r.get_rollout_history,
        ),
        Tool(
            "get_config",
            a.GetConfig,
            "read",
            "Show a service's runtime configuration: image, replicas, and per container the "
            "environment (secret references shown, not their values), resources, ports and probes.",
            r.get_config,
        ),
        Tool(
            "list_source",
            a.ListSource,
            "read",
            "List the files of the source snapshot of the version a service currently runs, with its "
            "version.",
            _list_source,
        ),
        Tool(
            "read_source",
            a.ReadSource,
            "read",
            "Read one file (`path` from list_source) of the source a service currently runs.",
            _read_source,
        ),
        Tool(
            "get_feature_flags",
            a.GetFeatureFlags,
            "read",
            "List the application's feature flags: current variant, possible variants, the service "
            "each one affects and what it does. Empty when the application serves no flags.",
            r.get_feature_flags,
        ),
        Tool(
            "incident_report",
            a.IncidentReportArgs,
            "report",
            "Open or update an incident: your own `incident_id`, the `alert_ids` it explains, the "
            "`culprit_services` at fault, the responsible `artifact` (KIND or KIND:REFERENCE, kinds: "
            f"{ARTIFACT_KIND_LIST}; e.g. release:cartservice@v1.2.3 or "
            "config:frontend/env/PORT), `status` (open|mitigated|resolved) and `notes`. A later "
            "report of the same incident replaces the earlier.",
            _incident_report,
        ),
        Tool(
            "restart_service",
            a.RestartService,
            "mutate",
            "Restart all pods of a service with a rolling restart (like `kubectl rollout restart`)."
            + _INCIDENT,
            m.restart_service,
        ),
        Tool(
            "scale_service",
            a.ScaleService,
            "mutate",
            "Set the number of replicas of a service (0 to 10)." + _INCIDENT,
            m.scale_service,
        ),
        Tool(
            "rollback_service",
            a.RollbackService,
            "mutate",
            "Roll a service back to its previous revision, or to `to_revision` from "
            "get_rollout_history (like `kubectl rollout undo`)." + _INCIDENT,
            m.rollback_service,
        ),
        Tool(
            "update_config",
            a.UpdateConfig,
            "mutate",
            "Change a service's container settings: `env` ({NAME: value}, null removes the variable),"
            " `resources` ({limits|requests: {cpu|memory: quantity}}, cpu 10m-4, memory 16Mi-8Gi), "
            "`ports` ({port name: containerPort}). Pods are replaced with the new settings." + _INCIDENT,
            m.update_config,
        ),
        Tool(
            "set_feature_flag",
            a.SetFeatureFlag,
            "mutate",
            "Set the variant of a feature flag (see get_feature_flags)." + _INCIDENT,
            m.set_feature_flag,
        ),
        Tool(
            "update_service",
            a.UpdateService,
            "mutate",
            "Edit the Kubernetes Service in front of a service (like `kubectl edit service`): the "
            "`target_port` (pods' port number or name) or `port` of one port (`port_name` when it has "
            "several), or its pod `selector` ({label: value}). The application's namespace only." + _INCIDENT,
            m.update_service,
        ),
        Tool(
            "uncordon_node",
            a.UncordonNode,
            "mutate",
            "Make a cordoned node schedulable again (like `kubectl uncordon`); name in `services` "
            "the workloads whose pods the cordon displaced." + _INCIDENT,
            m.uncordon_node,
        ),
        Tool(
            "delete_resource",
            a.DeleteResource,
            "mutate",
            "Delete one object; only pods of the application may be deleted (its controller replaces "
            "the pod). Deleting namespaces or deployments is forbidden." + _INCIDENT,
            m.delete_resource,
        ),
        Tool(
            "propose_patch",
            a.ProposePatch,
            "mutate",
            "Propose a source change: a unified diff (`--- a/PATH`, `+++ b/PATH`, `@@ -l,n +l,n @@` "
            "hunks) against file `path` of the source the service currently runs. Returns a "
            "`patch_id`, or why the diff does not apply." + _INCIDENT,
            m.propose_patch,
        ),
        Tool(
            "build_service_image",
            a.BuildServiceImage,
            "mutate",
            "Build a container image of the service from a proposed patch; returns the new image "
            "reference." + _INCIDENT,
            m.build_service_image,
        ),
        Tool(
            "submit_patch",
            a.SubmitPatch,
            "mutate",
            "Deploy an image built by build_service_image to the service (a rolling update)." + _INCIDENT,
            m.submit_patch,
        ),
    )
}
