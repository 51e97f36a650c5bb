from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.interface import args as a
from orchestrator.interface.policy import PolicyContext, decide, screen

CTX = PolicyContext(
    namespace="shop",
    workloads=frozenset({"frontend", "cart", "cart-redis"}),
    loadgen="loadgen",
    flags={"adFailure": frozenset({"on", "off"})},
)
INCIDENT = {"incident_id": "inc-1"}


def _decide(model: type[a.Args], ctx: PolicyContext = CTX, **fields: Any) -> tuple[str, str]:
    verdict = decide(model.model_validate(fields), ctx)
    return verdict.decision, verdict.reason


TABLE: list[tuple[str, type[a.Args], dict[str, Any], str, str]] = [
    # reads
    ("alerts", a.GetAlerts, {}, "allowed", ""),
    ("pods in the app namespace", a.GetResources, {"kind": "pods"}, "allowed", ""),
    ("pods in kube-system", a.GetResources, {"kind": "pods", "namespace": "kube-system"}, "allowed", ""),
    ("secrets", a.GetResources, {"kind": "secrets"}, "forbidden", "Secrets"),
    ("describe a secret", a.Describe, {"kind": "secrets", "name": "db"}, "forbidden", "Secrets"),
    (
        "chaos namespace",
        a.GetResources,
        {"kind": "pods", "namespace": "chaos-mesh"},
        "forbidden",
        "chaos-mesh",
    ),
    ("monitoring logs", a.GetLogs, {"pod": "prom-0", "namespace": "monitoring"}, "forbidden", "monitoring"),
    ("registry events", a.GetEvents, {"namespace": "marathon-registry"}, "forbidden", "marathon-registry"),
    (
        "describe chaos ns",
        a.Describe,
        {"kind": "namespaces", "name": "chaos-mesh"},
        "forbidden",
        "chaos-mesh",
    ),
    ("describe app ns", a.Describe, {"kind": "namespaces", "name": "shop"}, "allowed", ""),
    ("history of unknown", a.GetRolloutHistory, {"service": "nope"}, "denied", "unknown service"),
    ("config of the loadgen", a.GetConfig, {"service": "loadgen"}, "allowed", ""),
    ("source of a service", a.ReadSource, {"service": "cart", "path": "x.go"}, "allowed", ""),
    # report
    ("report", a.IncidentReportArgs, {"incident_id": "i", "artifact": "release"}, "allowed", ""),
    # mutations
    ("restart", a.RestartService, {**INCIDENT, "service": "cart"}, "allowed", ""),
    ("restart unknown", a.RestartService, {**INCIDENT, "service": "nope"}, "denied", "unknown service"),
    ("restart loadgen", a.RestartService, {**INCIDENT, "service": "loadgen"}, "forbidden", "load generator"),
    ("scale to 0", a.ScaleService, {**INCIDENT, "service": "cart", "replicas": 0}, "allowed", ""),
    ("scale to 10", a.ScaleService, {**INCIDENT, "service": "cart", "replicas": 10}, "allowed", ""),
    (
        "scale to 11",
        a.ScaleService,
        {**INCIDENT, "service": "cart", "replicas": 11},
        "denied",
        "between 0 and 10",
    ),
    (
        "scale to -1",
        a.ScaleService,
        {**INCIDENT, "service": "cart", "replicas": -1},
        "denied",
        "between 0 and 10",
    ),
    ("rollback", a.RollbackService, {**INCIDENT, "service": "frontend"}, "allowed", ""),
    (
        "cpu 5",
        a.UpdateConfig,
        {**INCIDENT, "service": "cart", "resources": {"limits": {"cpu": "5"}}},
        "denied",
        "10m and 4",
    ),
    (
        "cpu 5m",
        a.UpdateConfig,
        {**INCIDENT, "service": "cart", "resources": {"requests": {"cpu": "5m"}}},
        "denied",
        "10m and 4",
    ),
    (
        "memory 8Gi",
        a.UpdateConfig,
        {**INCIDENT, "service": "cart", "resources": {"limits": {"memory": "8Gi", "cpu": "4"}}},
        "allowed",
        "",
    ),
    (
        "memory 9Gi",
        a.UpdateConfig,
        {**INCIDENT, "service": "cart", "resources": {"limits": {"memory": "9Gi"}}},
        "denied",
        "16Mi and 8Gi",
    ),
    (
        "memory 8Mi",
        a.UpdateConfig,
        {**INCIDENT, "service": "cart", "resources": {"limits": {"memory": "8Mi"}}},
        "denied",
        "16Mi and 8Gi",
    ),
    ("empty update", a.UpdateConfig, {**INCIDENT, "service": "cart"}, "denied", "at least one"),
    ("env update", a.UpdateConfig, {**INCIDENT, "service": "cart", "env": {"A": None}}, "allowed", ""),
    ("flag", a.SetFeatureFlag, {**INCIDENT, "flag": "adFailure", "variant": "off"}, "allowed", ""),
    (
        "unknown flag",
        a.SetFeatureFlag,
        {**INCIDENT, "flag": "x", "variant": "off"},
        "denied",
        "unknown feature",
    ),
    (
        "unknown variant",
        a.SetFeatureFlag,
        {**INCIDENT, "flag": "adFailure", "variant": "x"},
        "denied",
        "no variant",
    ),
    ("delete a pod", a.DeleteResource, {**INCIDENT, "kind": "pod", "name": "cart-5f6-abcde"}, "allowed", ""),
    (
        "delete a pod of the longest owner",
        a.DeleteResource,
        {**INCIDENT, "kind": "pod", "name": "cart-redis-5f6-abcde"},
        "allowed",
        "",
    ),
    (
        "delete a stray pod",
        a.DeleteResource,
        {**INCIDENT, "kind": "pod", "name": "other-1"},
        "denied",
        "no workload",
    ),
    (
        "delete a loadgen pod",
        a.DeleteResource,
        {**INCIDENT, "kind": "pod", "name": "loadgen-1-a"},
        "forbidden",
        "load",
    ),
    (
        "delete the namespace",
        a.DeleteResource,
        {**INCIDENT, "kind": "namespace", "name": "shop"},
        "forbidden",
        "",
    ),
    (
        "delete a deployment",
        a.DeleteResource,
        {**INCIDENT, "kind": "deployment", "name": "cart"},
        "forbidden",
        "",
    ),
    ("delete a secret", a.DeleteResource, {**INCIDENT, "kind": "secret", "name": "db"}, "forbidden", ""),
    (
        "delete a service",
        a.DeleteResource,
        {**INCIDENT, "kind": "service", "name": "cart"},
        "denied",
        "only pods",
    ),
    (
        "delete a pod elsewhere",
        a.DeleteResource,
        {**INCIDENT, "kind": "pod", "name": "cart-1-a", "namespace": "default"},
        "denied",
        "only in namespace",
    ),
    (
        "delete in chaos ns",
        a.DeleteResource,
        {**INCIDENT, "kind": "pod", "name": "cart-1-a", "namespace": "chaos-mesh"},
        "forbidden",
        "chaos-mesh",
    ),
    ("propose", a.ProposePatch, {**INCIDENT, "service": "cart", "path": "a.go", "diff": "x"}, "allowed", ""),
    (
        "submit to unknown",
        a.SubmitPatch,
        {**INCIDENT, "service": "nope", "image": "x:1"},
        "denied",
        "unknown",
    ),
]


@pytest.mark.parametrize(
    ("label", "model", "fields", "decision", "reason"), TABLE, ids=[row[0] for row in TABLE]
)
def test_each_rule_decides_as_the_table_says(
    label: str, model: type[a.Args], fields: dict[str, Any], decision: str, reason: str
) -> None:
    got, why = _decide(model, **fields)
    assert got == decision, f"{label}: {why}"
    assert reason in why
    assert (why == "") == (got == "allowed")


def test_the_mutation_limit_denies_the_eleventh_change_but_not_reads_or_reports() -> None:
    spent = PolicyContext(**{**CTX.__dict__, "mutations_done": 10})
    assert _decide(a.RestartService, spent, **INCIDENT, service="cart")[0] == "denied"
    assert "limit of 10" in _decide(a.RestartService, spent, **INCIDENT, service="cart")[1]
    assert _decide(a.GetAlerts, spent)[0] == "allowed"
    assert _decide(a.IncidentReportArgs, spent, incident_id="i", artifact="pod")[0] == "allowed"
    nine = PolicyContext(**{**CTX.__dict__, "mutations_done": 9})
    assert _decide(a.RestartService, nine, **INCIDENT, service="cart")[0] == "allowed"


def test_the_read_limit_denies_the_201st_read_but_not_changes_or_reports() -> None:
    spent = PolicyContext(**{**CTX.__dict__, "reads_done": 200})
    assert _decide(a.GetAlerts, spent) == ("denied", "the limit of 200 reads per invocation is reached")
    assert _decide(a.GetTopology, spent)[0] == "denied"
    assert _decide(a.RestartService, spent, **INCIDENT, service="cart")[0] == "allowed"
    assert _decide(a.IncidentReportArgs, spent, incident_id="i", artifact="pod")[0] == "allowed"
    assert _decide(a.GetAlerts, PolicyContext(**{**CTX.__dict__, "reads_done": 199}))[0] == "allowed"


def test_forbidden_outranks_the_read_limit() -> None:
    spent = PolicyContext(**{**CTX.__dict__, "reads_done": 200})
    assert _decide(a.GetResources, spent, kind="secrets")[0] == "forbidden"


def test_forbidden_outranks_the_mutation_limit() -> None:
    spent = PolicyContext(**{**CTX.__dict__, "mutations_done": 10})
    assert _decide(a.DeleteResource, spent, **INCIDENT, kind="namespace", name="shop")[0] == "forbidden"


@given(st.integers(min_value=-50, max_value=50))
def test_scaling_is_allowed_exactly_within_zero_to_ten(replicas: int) -> None:
    decision, _ = _decide(a.ScaleService, CTX, **INCIDENT, service="cart", replicas=replicas)
    assert (decision == "allowed") == (0 <= replicas <= 10)


@given(st.integers(min_value=1, max_value=10_000))
def test_cpu_millicores_are_allowed_exactly_between_10m_and_4_cores(millicores: int) -> None:
    change = {"limits": {"cpu": f"{millicores}m"}}
    decision, _ = _decide(a.UpdateConfig, CTX, **INCIDENT, service="cart", resources=change)
    assert (decision == "allowed") == (10 <= millicores <= 4000)


@given(st.integers(min_value=1, max_value=20_000))
def test_memory_mebibytes_are_allowed_exactly_between_16mi_and_8gi(mebibytes: int) -> None:
    change = {"requests": {"memory": f"{mebibytes}Mi"}}
    decision, _ = _decide(a.UpdateConfig, CTX, **INCIDENT, service="cart", resources=change)
    assert (decision == "allowed") == (16 <= mebibytes <= 8192)


SHAPES: list[tuple[str, type[a.Args], dict[str, Any], str]] = [
    # (label, tool arguments, raw arguments as an agent sends them, what the reason names)
    ("scale with a namespace field", a.ScaleService,
     {**INCIDENT, "service": "prometheus", "namespace": "monitoring", "replicas": 0}, "monitoring"),
    ("scale a namespaced name", a.ScaleService,
     {**INCIDENT, "service": "chaos-mesh/chaos-controller-manager", "replicas": 0}, "chaos-mesh"),
    ("restart a DNS name", a.RestartService, {**INCIDENT, "service": "prometheus.monitoring"}, "monitoring"),
    ("delete with a misspelt kind", a.DeleteResource,
     {**INCIDENT, "kind": "pods", "name": "x", "namespace": "chaos-mesh"}, "chaos-mesh"),
    ("delete a Namespace", a.DeleteResource, {**INCIDENT, "kind": "Namespace", "name": "shop"}, "namespace"),
    ("delete nodes", a.DeleteResource, {**INCIDENT, "kind": "nodes", "name": "n1"}, "node"),
    ("list chaos objects", a.GetResources, {"kind": "podchaos"}, "fault tooling"),
    ("list chaos objects by group", a.GetResources, {"kind": "schedules.chaos-mesh.org"}, "fault tooling"),
    ("list Secrets", a.GetResources, {"kind": "Secret"}, "Secrets"),
    ("describe v1/secrets", a.Describe, {"kind": "v1/secrets", "name": "db"}, "Secrets"),
    ("describe a namespaced pod", a.Describe, {"kind": "pods", "name": "chaos-mesh/daemon-1"}, "chaos-mesh"),
    ("logs of a namespaced pod", a.GetLogs, {"pod": "monitoring/prometheus-0"}, "monitoring"),
    ("events of a hidden namespace", a.GetEvents, {"name": "marathon"}, "marathon"),
    ("alerts of a hidden service", a.GetAlerts, {"service": "marathon-registry"}, "marathon-registry"),
    ("an extra key", a.GetTopology, {"chaos-mesh": True}, "chaos-mesh"),
    ("env pointing at monitoring", a.UpdateConfig,
     {**INCIDENT, "service": "cart", "env": {"OTEL_ENDPOINT": "http://collector.monitoring.svc:4317"}},
     "monitoring"),
    ("metrics of a hidden namespace", a.QueryMetrics, {"query": 'up{namespace="monitoring"}'}, "monitoring"),
    ("metrics by regex", a.QueryMetrics, {"query": "sum(up{namespace=~'chaos.*'})"}, "chaos-mesh"),
    ("metrics with an escape", a.QueryMetrics, {"query": 'up{namespace="chaos\\x2dmesh"}'}, "chaos-mesh"),
    ("metrics of an exported namespace", a.QueryMetrics,
     {"query": "up{exported_namespace=`marathon`}"}, "marathon"),
    ("metrics relabelled", a.QueryMetrics,
     {"query": 'label_replace(up, "namespace", "marathon-registry", "", "")'}, "marathon-registry"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "model", "raw", "reason"), SHAPES, ids=[row[0] for row in SHAPES])
def test_every_shape_that_reaches_for_hidden_things_is_forbidden_before_validation(
    label: str, model: type[a.Args], raw: dict[str, Any], reason: str
) -> None:
    verdict = screen(raw, model=model, ctx=CTX)
    assert verdict is not None, label
    assert verdict.decision == "forbidden"
    assert reason in verdict.reason


ALLOWED_SHAPES: list[tuple[str, type[a.Args], dict[str, Any]]] = [
    ("a report may say anything", a.IncidentReportArgs,
     {"incident_id": "monitoring", "artifact": "config:monitoring/x", "notes": "chaos-mesh, monitoring"}),
    ("a grep is free text", a.GetLogs, {"service": "cart", "grep": "monitoring|chaos-mesh"}),
    ("a diff is free text", a.ProposePatch,
     {**INCIDENT, "service": "cart", "path": "monitoring/x.go", "diff": "+// see chaos-mesh"}),
    ("an env name is one word", a.UpdateConfig,
     {**INCIDENT, "service": "cart", "env": {"MONITORING_ON": "1"}}),
    ("a longer name is another name", a.RestartService, {**INCIDENT, "service": "monitoring-proxy"}),
    ("metrics of the app", a.QueryMetrics,
     {"query": 'sum by (service_name) (rate(calls_total{namespace="shop"}[1m]))'}),
    ("metrics excluding a namespace", a.QueryMetrics,
     {"query": 'up{namespace!="shop", namespace!~"monitoring"}'}),
    ("a regex of the app", a.QueryMetrics, {"query": 'up{namespace=~"sho.*"}'}),
    ("a kind of the app", a.GetResources, {"kind": "deployments"}),
]  # fmt: skip


@pytest.mark.parametrize(("label", "model", "raw"), ALLOWED_SHAPES, ids=[row[0] for row in ALLOWED_SHAPES])
def test_free_text_and_other_names_are_not_taken_for_hidden_namespaces(
    label: str, model: type[a.Args], raw: dict[str, Any]
) -> None:
    assert screen(raw, model=model, ctx=CTX) is None, label


def test_a_valid_call_naming_a_hidden_namespace_in_a_dns_name_is_forbidden_by_decide() -> None:
    decision, reason = _decide(a.RestartService, **INCIDENT, service="prometheus.monitoring")
    assert (decision, "monitoring" in reason) == ("forbidden", True)
    decision, reason = _decide(a.QueryMetrics, query='up{namespace=~"mon.*"}')
    assert (decision, "monitoring" in reason) == ("forbidden", True)
