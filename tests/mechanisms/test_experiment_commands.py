"""``marathon catalog export-ctk``: entries as Chaos Toolkit experiments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main

CHAOS = Path(sys.executable).with_name("chaos")


@pytest.mark.slow
def test_export_ctk_writes_a_network_delay_entry_that_chaos_validate_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "experiment.json"
    assert main(["catalog", "export-ctk", "ob-cart-redis-latency", "-o", str(path)]) == 0
    assert capsys.readouterr().out == f"wrote {path}\n"
    document = json.loads(path.read_text())
    create = document["method"][0]["provider"]["arguments"]
    assert create["resource"]["kind"] == "NetworkChaos"
    assert create["resource"]["spec"]["action"] == "delay"
    assert create["resource"]["spec"]["selector"]["labelSelectors"] == {"app": "cartservice"}
    assert document["rollbacks"][0]["provider"]["func"] == "delete_custom_object"
    if not CHAOS.exists():
        pytest.skip("the chaostoolkit CLI is not installed")
    done = subprocess.run(
        [str(CHAOS), "--no-log-file", "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "experiment syntax and semantic look valid" in done.stdout + done.stderr


def test_export_ctk_of_a_config_entry_restores_the_value_the_manifests_deploy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["catalog", "export-ctk", "ob-cart-redis-port"]) == 0
    document = json.loads(capsys.readouterr().out)
    change = document["method"][0]["provider"]["arguments"]
    restore = document["rollbacks"][0]["provider"]["arguments"]
    assert change[:5] == ["patch", "deployment", "cartservice", "-n", "online-boutique"]
    assert "redis-cart:6380" in change[-1]
    assert "redis-cart:6379" in restore[-1] and "6380" not in restore[-1]


def test_export_ctk_of_an_unknown_entry_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "export-ctk", "ob-no-such-entry"]) == 2
    assert "'ob-no-such-entry'" in capsys.readouterr().err


def test_export_ctk_keeps_a_peer_written_as_a_selector_in_the_app_namespace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["catalog", "export-ctk", "ob-cart-redis-partition"]) == 0
    spec = json.loads(capsys.readouterr().out)["method"][0]["provider"]["arguments"]["resource"]["spec"]
    assert spec["target"] == {
        "mode": "all",
        "selector": {"namespaces": ["online-boutique"], "labelSelectors": {"app": "redis-cart"}},
    }
    assert spec["direction"] == "both"


def test_export_ctk_holds_the_fault_for_the_duration_given_and_queries_the_prometheus_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "catalog",
        "export-ctk",
        "ob-cart-redis-latency",
        "--duration",
        "12",
        "--prometheus",
        "http://p:1",
    ]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["method"][0]["pauses"] == {"after": 12.0}
    assert document["configuration"]["prometheus_base_url"] == "http://p:1"


@pytest.mark.parametrize("duration", ["0", "-5", "nan", "inf"])
def test_export_ctk_refuses_a_duration_that_is_not_a_positive_number_of_seconds(
    duration: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog", "export-ctk", "ob-cart-redis-latency", "--duration", duration]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "--duration" in captured.err and duration in captured.err
