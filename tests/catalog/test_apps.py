"""The app registry: an app is its folders. A fourth app written into a fresh project (its topology and
rendered manifests, its rule file, a catalog of one entry) is known, drawn from, alerted on and simulated
without a line of code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from orchestrator.agents.runbook_rules import RULE_TABLE, rule_for
from orchestrator.catalog.apps import app_names
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.manifests import app_manifest_path, render_yaml
from orchestrator.catalog.topologies import load_topology
from orchestrator.errors import CatalogError
from orchestrator.schedule import ScheduleParams, plan_schedule
from orchestrator.telemetry.rules import default_rule_pack_dir, load_rule_pack
from orchestrator.twin.boot import Twin
from orchestrator.twin.store import PODS

APP = "tiny-shop"

TOPOLOGY = """\
app: tiny-shop
namespace: tiny-shop
version: v1.0.0
entry_point: web
requests_per_second: 8
nodes:
  - {name: worker-a, zone: zone-a}
  - {name: worker-b, zone: zone-b}
services:
  - name: web
    language: Go
    image: example.org/tiny-shop/web:v1.0.0
    ports:
      - {name: http, container_port: 8080, protocol: HTTP}
    resources:
      requests: {cpu: 50m, memory: 32Mi}
      limits: {cpu: 200m, memory: 128Mi}
    address_env:
      KV_ADDR: "kv:6379"
    readiness: {type: httpGet, path: /healthz, port: 8080}
    call_context:
      HGET: "could not load the basket"
  - name: kv
    kind: datastore
    datastore_kind: redis
    language: C (Redis)
    image: redis:alpine
    ports:
      - {name: tcp-redis, container_port: 6379, protocol: Redis}
    resources:
      limits: {memory: 64Mi}
    readiness: {type: tcpSocket, port: 6379}
routes:
  - name: GET /
    weight: 1
    calls:
      - {to: kv, op: HGET}
"""

RULES = """\
groups:
  - name: tiny-shop
    interval: 15s
    rules:
      - alert: TinyShopBasketErrors
        expr: |
          sum by (namespace, service_name) (rate(traces_span_metrics_calls_total{namespace="tiny-shop",
            service_name="web", status_code="STATUS_CODE_ERROR"}[5m])) > 0.1
        for: 2m
        labels:
          severity: critical
          signal: errors
          app: tiny-shop
        annotations:
          summary: "Tiny Shop baskets fail"
          description: "The web front of Tiny Shop fails requests."
"""

CATALOG = """\
faults:
  - id: ts-kv-pod-kill
    app: tiny-shop
    category: infrastructure
    mechanism: chaos
    target: kv
    culprits: [kv]
    artifact: pod:kv
    description: The kv pod is killed and the baskets it held are lost until a new pod is ready.
    log:
      service: web
      message: "could not load the basket"
    probe:
      query: min(kube_deployment_status_replicas_available{namespace="$namespace", deployment="kv"})
      healthy: {op: ">=", value: 1}
    remedy: {action: wait}
    revert: await-recovery
    inject:
      kind: PodChaos
      spec: {action: pod-kill, mode: all}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding only the new app: its manifests folder, its rule file beside the shared rules, and
    its catalog folder."""
    root = tmp_path_factory.mktemp("project")
    topology = root / "manifests" / APP / "topology.yaml"
    topology.parent.mkdir(parents=True)
    topology.write_text(TOPOLOGY)
    app_manifest_path(APP, root=root).write_text(render_yaml(load_topology(APP, root=root)))
    rules = root / "alert_rules"
    shutil.copytree(default_rule_pack_dir(), rules, ignore=shutil.ignore_patterns("tests"))
    (rules / f"{APP}.yaml").write_text(RULES)
    catalog = root / "fault_catalog" / APP / "chaos.yaml"
    catalog.parent.mkdir(parents=True)
    catalog.write_text(CATALOG)
    return root


def test_the_registry_knows_an_app_by_its_topology_folder_alone(project: Path) -> None:
    assert app_names(root=project) == (APP,)
    assert APP not in app_names()
    with pytest.raises(CatalogError, match=f"known apps: {APP}$"):
        load_topology("pet-store", root=project)


def test_the_new_apps_catalog_loads_with_its_scope_and_a_schedule_draws_from_it(project: Path) -> None:
    catalog = load_catalog(APP, root=project)
    assert [entry.id for entry in catalog.entries] == ["ts-kv-pod-kill"]
    assert catalog.scope("ts-kv-pod-kill") == frozenset({"kv", "web"})
    params = ScheduleParams(fault_count=6, injection_period_s=1800, observation_period_s=600)
    schedule = plan_schedule(app=APP, entries=catalog.entries, seed=4, params=params)
    assert schedule.activations
    assert {activation.catalog_id for activation in schedule.activations} == {"ts-kv-pod-kill"}
    assert plan_schedule(app=APP, entries=catalog.entries, seed=4, params=params) == schedule


def test_a_run_of_the_new_app_evaluates_its_own_rules_and_the_shared_ones_only(project: Path) -> None:
    pack = load_rule_pack(project / "alert_rules")
    mine = pack.for_app(APP)
    assert "TinyShopBasketErrors" in mine.names()
    assert {rule.app for rule in mine.rules} == {None, APP}
    assert "OnlineBoutiqueCheckoutErrors" not in mine.names()
    assert "TinyShopBasketErrors" not in pack.for_app("online-boutique").names()
    (rule,) = (rule for rule in mine.rules if rule.name == "TinyShopBasketErrors")
    signal = dict(rule.labels)["signal"]
    assert signal in RULE_TABLE and rule_for(signal).action == "rollback"


def test_the_twin_boots_the_new_app_serves_it_and_emits_its_series(project: Path) -> None:
    twin = Twin(APP, seed=3, root=project)
    twin.advance(120.0)
    samples = twin.samples()
    names = {name for name, _labels, _value in samples}
    assert {"traces_span_metrics_calls_total", "kube_pod_info", "redis_up", "redis_commands_total"} <= names
    phases = {
        dict(labels)["pod"].rsplit("-", 2)[0]: value
        for name, labels, value in samples
        if name == "kube_pod_status_phase" and dict(labels)["phase"] == "Running"
    }
    assert phases == {"web": 1.0, "kv": 1.0}
    calls = [
        value
        for name, labels, value in samples
        if name == "traces_span_metrics_calls_total" and dict(labels)["service_name"] == "web"
    ]
    assert sum(calls) > 0
    rendered = yaml.safe_load_all(app_manifest_path(APP, root=project).read_text())
    assert {doc["kind"] for doc in rendered} >= {"Namespace", "Deployment", "Service"}


def test_a_failed_call_of_the_new_app_is_logged_in_its_own_words(project: Path) -> None:
    twin = Twin(APP, seed=3, root=project)
    twin.advance(60.0)
    pods = {pod["metadata"]["name"].rsplit("-", 2)[0]: pod for pod in twin.cluster.store.list(PODS, APP)}
    twin.cluster.delete_pod(APP, pods["kv"]["metadata"]["name"], graceful=False)
    twin.advance(30.0)
    web = pods["web"]["metadata"]["name"]
    lines = twin.cluster.logbook.lines(namespace=APP, pod=web, container="web") or []
    assert any(" ERROR could not load the basket: rpc error: " in line for _t, line in lines)
