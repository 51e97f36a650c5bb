"""The series contract is one table: SERIES.md describes the same series, and the catalog checks probes
against it."""

from __future__ import annotations

import re

from orchestrator.telemetry.rules import default_rule_pack_dir
from orchestrator.vocabulary.series import EXPORTERS, series_names

_FAMILIES = r"(?:traces|kube|container|redis|mysql|pg|kafka|rabbitmq)_[a-z0-9_]*"


def test_series_md_names_exactly_the_series_of_the_contract() -> None:
    text = (default_rule_pack_dir() / "SERIES.md").read_text(encoding="utf-8")
    named = set(re.findall(rf"`({_FAMILIES})(?:\{{[^`]*)?`", text))
    assert named == set(series_names())


def test_every_exporter_series_is_named_once_per_exporter() -> None:
    for kind, exporter in EXPORTERS.items():
        names = exporter.series()
        assert len(names) == len(set(names)) >= 1, kind
