"""The ``marathon rules`` and ``marathon alerts`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.telemetry.telemetry_support import labels, need_binary, push, running_prometheus, steps, write_pack

T0 = 1_767_225_600.0
RULES = """
groups:
  - name: g
    interval: 10s
    rules:
      - alert: CliDown
        expr: cli_up == 0
        for: 20s
        labels: {severity: critical}
        annotations: {summary: "{{ $labels.service }} down"}
"""


def test_rules_show_prints_version_hash_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "show"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rule pack ") and " sha256 " in out
    assert "service-golden-signals: 7 rules" in out


def test_rules_check_runs_promtool_on_the_pack(capsys: pytest.CaptureFixture[str]) -> None:
    need_binary("promtool")
    assert main(["rules", "check"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_an_invalid_pack_exits_with_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_pack(tmp_path, RULES.replace("for: 20s", "for: later"))
    assert main(["rules", "show", "--dir", str(tmp_path)]) == 2
    assert "groups.0.rules.0.for = later" in capsys.readouterr().err


def test_alerts_evaluate_prints_the_history_as_json_lines(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for server in running_prometheus(tmp_path_factory):
        push(
            server,
            {labels("cli_up", service="cart"): steps(T0, T0 + 300, 5, lambda t: 0 if t >= T0 + 100 else 1)},
        )
        pack = write_pack(tmp_path / "pack", RULES)
        code = main(
            [
                "alerts",
                "evaluate",
                "--prometheus",
                server.url,
                "--start",
                str(T0),
                "--until",
                str(T0 + 300),
                "--every",
                "60",
                "--dir",
                str(pack),
            ]
        )
    assert code == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["rule"], r["state"], r["starts_at"] - T0, r["labels"]["service"]) for r in records] == [
        ("CliDown", "firing", 120.0, "cart")
    ]
