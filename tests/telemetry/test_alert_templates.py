"""Annotation templating: rendered here exactly as Prometheus renders it (checked against promtool)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrator.telemetry.templates import go_float, humanize, render, template_problems
from tests.telemetry.telemetry_support import need_binary

TEMPLATE = (
    '{{ $value }}|{{ $value | humanize }}|{{ $value | humanizePercentage }}|{{ printf "%.2f" $value }}'
    '|{{ printf "%.0f" $value }}|{{ $labels.missing }}|{{ $labels.k }}|{{- " trimmed " -}}|'
)
VALUES = [
    "1000000",
    "123456",
    "1234567",
    "0.00001",
    "1e21",
    "0.1",
    "NaN",
    "-Inf",
    "12345.678",
    "1e-7",
    "123456789012",
    "0",
    "0.95",
    "-2.5",
    "1392.0000001",
]


def test_values_render_like_go_formats_them() -> None:
    assert [go_float(v) for v in (1e6, 123456.0, 0.1, 1e-5, 1234567.0, -2.5)] == [
        "1e+06",
        "123456",
        "0.1",
        "1e-05",
        "1.234567e+06",
        "-2.5",
    ]
    assert [humanize(v) for v in (0.1666666, 1234.5, 2e9, 0.0)] == ["166.7m", "1.234k", "2G", "0"]


def test_unsupported_template_actions_are_reported() -> None:
    assert template_problems("{{ $labels.pod }} at {{ $value | humanize }}") == []
    assert template_problems("{{ range $labels }}x{{ end }}") != []
    assert template_problems("{{ $value | title }}") != []
    assert template_problems("{{ $value") != []


def test_rendering_matches_promtool_for_every_supported_form(tmp_path: Path) -> None:
    need_binary("promtool")
    rules = {
        "groups": [{"name": "g", "rules": [{"alert": "V", "expr": "v", "annotations": {"a": TEMPLATE}}]}]
    }
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    series = [{"series": f'v{{k="{i}"}}', "values": value} for i, value in enumerate(VALUES)]
    test = {
        "rule_files": ["rules.yaml"],
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [{"eval_time": "0m", "alertname": "V", "exp_alerts": []}],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test), encoding="utf-8")
    # The test expects no alert, so promtool prints every alert it got with its rendered annotations.
    done = subprocess.run(
        ["promtool", "test", "rules", str(tmp_path / "test.yaml")], capture_output=True, text=True, timeout=60
    )
    out = done.stdout + done.stderr
    got = dict(re.findall(r'k="(\d+)".*?\n\s*Annotations:\{a="(.*?)"\}', out))
    assert len(got) == len(VALUES), out
    for i, value in enumerate(VALUES):
        expected = render(TEMPLATE, labels={"k": str(i)}, value=float(value)).replace('"', '\\"')
        assert got[str(i)] == expected, value


@pytest.mark.parametrize("value", [0.05, 0.3333333333, 1.0])
def test_percentages_keep_four_significant_digits(value: float) -> None:
    assert (
        render("{{ $value | humanizePercentage }}", labels={}, value=value)
        == {0.05: "5%", 0.3333333333: "33.33%", 1.0: "100%"}[value]
    )
