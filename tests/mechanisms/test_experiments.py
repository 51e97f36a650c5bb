from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog.faults import FAULT_ENTRY, ChaosFault, ConfigFault
from orchestrator.mechanisms.experiments import experiment

CHAOS = Path(sys.executable).with_name("chaos")


def _network_delay() -> ChaosFault:
    entry = FAULT_ENTRY.validate_python(
        {
            "id": "ob-net-delay-catalog",
            "app": "online-boutique",
            "category": "database-network",
            "mechanism": "chaos",
            "target": "productcatalogservice",
            "culprits": ["productcatalogservice"],
            "artifact": "network:productcatalogservice",
            "description": "500 ms of delay on every packet to the product catalog",
            "log": {"service": "frontend", "message": "context deadline exceeded"},
            "probe": {
                "query": 'histogram_quantile(0.99, sum by (le) (rate(x{namespace="$namespace"}[1m])))',
                "healthy": {"op": "<", "value": 800},
            },
            "remedy": {"action": "wait"},
            "inject": {"kind": "NetworkChaos", "spec": {"action": "delay", "delay": {"latency": "500ms"}}},
        }
    )
    assert isinstance(entry, ChaosFault)
    return entry


def test_a_network_delay_becomes_a_chaos_mesh_object_with_a_delete_rollback() -> None:
    document = experiment(
        _network_delay(),
        namespace="online-boutique",
        chaos_namespace="chaos",
        prometheus_url="http://127.0.0.1:9",
    )
    (create, _probe) = document["method"]
    body = create["provider"]["arguments"]["resource"]
    assert body["kind"] == "NetworkChaos"
    assert body["metadata"]["namespace"] == "chaos"
    assert body["spec"]["selector"] == {
        "namespaces": ["online-boutique"],
        "labelSelectors": {"app": "productcatalogservice"},
    }
    assert document["rollbacks"][0]["provider"]["func"] == "delete_custom_object"
    query = document["steady-state-hypothesis"]["probes"][0]["provider"]["arguments"]["query"]
    assert 'namespace="online-boutique"' in query and query.endswith("< bool 800.0")


def test_the_method_holds_the_fault_for_its_duration_then_records_the_symptom_and_always_rolls_back() -> None:
    document = experiment(
        _network_delay(),
        namespace="online-boutique",
        chaos_namespace="chaos",
        prometheus_url="http://127.0.0.1:9",
        hold_s=42.0,
    )
    (create, probe) = document["method"]
    assert create["pauses"] == {"after": 42.0}
    assert "pauses" not in probe and probe["type"] == "probe"
    query = probe["provider"]["arguments"]["query"]
    assert query.startswith("scalar(histogram_quantile(0.99") and "bool" not in query
    assert document["configuration"] == {"prometheus_base_url": "http://127.0.0.1:9"}
    assert document["runtime"] == {"rollbacks": {"strategy": "always"}}


def test_without_a_duration_the_method_holds_the_fault_as_long_as_admission_does() -> None:
    document = experiment(
        _network_delay(), namespace="online-boutique", chaos_namespace="chaos", prometheus_url="http://x"
    )
    assert document["method"][0]["pauses"] == {"after": 300.0}


@pytest.mark.skipif(not CHAOS.exists(), reason="the chaostoolkit CLI is not installed")
def test_the_exported_network_delay_experiment_passes_chaos_validate(tmp_path: Path) -> None:
    path = tmp_path / "experiment.json"
    document = experiment(
        _network_delay(),
        namespace="online-boutique",
        chaos_namespace="chaos",
        prometheus_url="http://127.0.0.1:9",
    )
    path.write_text(json.dumps(document))
    result = subprocess.run(
        [str(CHAOS), "--no-log-file", "validate", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "experiment syntax and semantic look valid" in (result.stdout + result.stderr)


def _config_entry() -> ConfigFault:
    entry = FAULT_ENTRY.validate_python(
        {
            "id": "ob-cart-redis-port",
            "app": "online-boutique",
            "category": "configuration-bug",
            "mechanism": "config",
            "target": "cartservice",
            "culprits": ["cartservice"],
            "artifact": "config:cartservice/env/REDIS_ADDR",
            "description": "cartservice points at a Redis port with no listener",
            "intended_update": "move the cart cache to the new Redis port",
            "defect": "nothing listens on 6380",
            "log": {
                "service": "cartservice",
                "message": "It was not possible to connect to the redis server(s)",
            },
            "probe": {"query": "up", "healthy": {"op": "<", "value": 0.05}},
            "remedy": {"action": "rollback", "service": "cartservice"},
            "inject": {"field": "env/REDIS_ADDR", "value": "redis-cart:6380"},
        }
    )
    assert isinstance(entry, ConfigFault)
    return entry


def test_a_config_fault_is_a_kubectl_patch_whose_rollback_restores_the_baseline_value() -> None:
    baseline: dict[str, Any] = {
        "kind": "Deployment",
        "metadata": {"name": "cartservice"},
        "spec": {"template": {"spec": {"containers": [{"name": "server", "image": "cart:v1",
                 "env": [{"name": "REDIS_ADDR", "value": "redis-cart:6379"}]}]}}},
    }  # fmt: skip
    document = experiment(
        _config_entry(), namespace="ob", chaos_namespace="chaos", prometheus_url="http://x", baseline=baseline
    )
    change = document["method"][0]["provider"]["arguments"]
    restore = document["rollbacks"][0]["provider"]["arguments"]
    assert change[:6] == ["patch", "deployment", "cartservice", "-n", "ob", "--type"]
    assert "redis-cart:6380" in change[-1] and "redis-cart:6379" in restore[-1]
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")


def test_an_http_chaos_keeps_which_side_of_the_exchange_it_targets() -> None:
    from orchestrator.catalog.faults import ChaosInject
    from orchestrator.mechanisms.chaos import chaos_object

    inject = ChaosInject(kind="HTTPChaos", spec={"target": "Request", "port": 8080, "abort": True})
    body = chaos_object(inject=inject, name="h", chaos_namespace="c", app_namespace="ob", target="frontend")
    assert body["spec"]["target"] == "Request"
    assert body["spec"]["selector"]["labelSelectors"] == {"app": "frontend"}
