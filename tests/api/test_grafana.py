"""deploy/grafana/marathon.json is a Grafana dashboard that can work: it is a dashboard model, every panel
reads the templated Prometheus data source, and every PromQL expression in it parses (promtool) and names
only metrics the control plane's /metrics exposes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from orchestrator.api.app import Settings, create_app
from orchestrator.api.registry import Registry
from orchestrator.run.events import Failed, Injected, Invoked, Reverted

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "marathon.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
METRIC = re.compile(r"\bmarathon_[a-z0-9_]+\b")
# What Grafana puts in place of its own and the dashboard's variables before the query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "6h"}

_GRID = {
    "type": "object",
    "required": ["h", "w", "x", "y"],
    "properties": {
        "h": {"type": "integer", "minimum": 1},
        "w": {"type": "integer", "minimum": 1, "maximum": 24},
        "x": {"type": "integer", "minimum": 0, "maximum": 23},
        "y": {"type": "integer", "minimum": 0},
    },
}
_DATASOURCE_REF = {
    "type": "object",
    "required": ["type", "uid"],
    "properties": {"type": {"type": "string"}, "uid": {"type": "string"}},
}
# The parts of Grafana's dashboard model (schemaVersion 39) this dashboard uses, as Grafana reads them.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels", "templating", "time"],
    "properties": {
        "uid": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,40}$"},
        "title": {"type": "string", "minLength": 1},
        "schemaVersion": {"type": "integer", "minimum": 36},
        "version": {"type": "integer"},
        "editable": {"type": "boolean"},
        "refresh": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "time": {
            "type": "object",
            "required": ["from", "to"],
            "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        },
        "templating": {
            "type": "object",
            "required": ["list"],
            "properties": {
                "list": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "type"],
                        "properties": {
                            "name": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"},
                            "type": {
                                "enum": ["query", "datasource", "custom", "constant", "interval", "textbox"]
                            },
                            "datasource": _DATASOURCE_REF,
                            "includeAll": {"type": "boolean"},
                            "multi": {"type": "boolean"},
                        },
                    },
                }
            },
        },
        "panels": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "type", "title", "gridPos"],
                "properties": {
                    "id": {"type": "integer", "minimum": 1},
                    "type": {"type": "string"},
                    "title": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "gridPos": _GRID,
                    "datasource": _DATASOURCE_REF,
                    "targets": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["refId"],
                            "properties": {
                                "refId": {"type": "string", "minLength": 1},
                                "expr": {"type": "string"},
                                "legendFormat": {"type": "string"},
                                "datasource": _DATASOURCE_REF,
                            },
                        },
                    },
                    "fieldConfig": {
                        "type": "object",
                        "required": ["defaults", "overrides"],
                        "properties": {"defaults": {"type": "object"}, "overrides": {"type": "array"}},
                    },
                    "options": {"type": "object"},
                    "transformations": {"type": "array", "items": {"type": "object", "required": ["id"]}},
                },
            },
        },
    },
}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return document


def _expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield f"panel {panel['title']!r} {target['refId']}", target["expr"]


def _variable_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable {variable['name']}", variable["query"]["query"]


def _as_prometheus_gets_it(expr: str, dashboard: dict[str, Any]) -> str:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            expr = expr.replace(f"${variable['name']}", variable.get("allValue") or ".*")
    assert "$" not in expr, expr
    return expr


def test_the_dashboard_is_a_grafana_dashboard_model(dashboard: dict[str, Any]) -> None:
    jsonschema.validate(dashboard, SCHEMA)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    datasource = [v for v in dashboard["templating"]["list"] if v["name"] == "datasource"]
    assert datasource and datasource[0]["type"] == "datasource" and datasource[0]["query"] == "prometheus"


def test_every_panel_reads_the_templated_prometheus_data_source_and_sits_on_the_grid_alone(
    dashboard: dict[str, Any],
) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard["panels"]:
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]


def _exposed_names(tmp_path: Path) -> set[str]:
    """The sample names a control plane with an active and a scored run, and this server's events, exposes."""
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    app = create_app(Settings(db_url=url, data_dir=tmp_path, token=None))
    with TestClient(app) as client:
        registry = Registry(url)  # another process's runs, registered once the server is up
        for run_id, status in (("live", "running"), ("done", "finished")):
            registry.create(fields={
                "id": run_id, "app": "online-boutique", "seed": 1, "agent": "noop", "backend": "twin",
                "clock": "stepped", "target": f"twin:{run_id}", "source": "nightly 2026-12-01",
                "config_json": {}, "home": tmp_path / run_id, "created_at": "2026-12-01T02:00:00+00:00",
            })  # fmt: skip
            registry.update(run_id, status=status, active_faults=["f000"], firing=1, invocations=3)
        registry.update("done", score={"marathon_score": 42.0}, active_faults=[])
        metrics = app.state.runs.metrics
        for event in (
            Injected(fault_id="f000", catalog_id="ob-x", t=120.0, category="network", target="cartservice"),
            Reverted(fault_id="f000", t=240.0, outcome="reverted"),
            Failed(operation="revert", error="API down", fault_id="f000", catalog_id="ob-x"),
            Invoked(n=1, start_s=120.0, end_s=121.0, exit_code=0, timed_out=False, wall_s=0.7),
        ):
            metrics.observe(app="online-boutique", agent="noop", event=event)
        exposition = client.get("/metrics").text
    return {sample.name for family in text_string_to_metric_families(exposition) for sample in family.samples}


def test_every_expression_names_only_metrics_the_control_plane_exposes(
    dashboard: dict[str, Any], tmp_path: Path
) -> None:
    exposed = _exposed_names(tmp_path)
    used: set[str] = set()
    for where, expr in [*_expressions(dashboard), *_variable_queries(dashboard)]:
        names = set(METRIC.findall(expr))
        assert names, f"{where} reads no marathon metric: {expr}"
        assert names <= exposed, f"{where}: {sorted(names - exposed)} not exposed"
        used |= names
    # The live panels the dashboard is for.
    assert {"marathon_run_active_faults", "marathon_run_firing_alerts", "marathon_agent_invocations_total",
            "marathon_run_score", "marathon_leaderboard_mean_score"} <= used  # fmt: skip


def test_every_expression_parses_under_promtool(dashboard: dict[str, Any], tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed (Debian package 'prometheus', from make setup)")
        pytest.skip("promtool is not installed (Debian package 'prometheus')")
    expressions = list(_expressions(dashboard))
    rules = {
        "groups": [
            {
                "name": "marathon-dashboard",
                "rules": [
                    {"record": f"dashboard:expression_{i}", "expr": _as_prometheus_gets_it(expr, dashboard)}
                    for i, (_, expr) in enumerate(expressions)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(expressions)} rules found" in checked.stdout + checked.stderr
