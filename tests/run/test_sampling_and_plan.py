"""Sampling over a grid of schedule times from batched range queries, admission, and the app's rule groups."""

from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.catalog.admissions import (
    FILE_NAME as ADMISSION_FILE,
)
from orchestrator.catalog.admissions import AdmissionFile, AdmissionRecord, Procedure, render_admission
from orchestrator.catalog.faults import Healthy
from orchestrator.catalog.faults import SymptomProbe as CatalogProbe
from orchestrator.catalog.loading import default_root, load_catalog
from orchestrator.run.plan import app_rules, read_admission
from orchestrator.run.sampling import Sampler, by_time, grid, probe_of
from orchestrator.telemetry.alerts import Sample
from orchestrator.telemetry.querying import Series
from orchestrator.telemetry.rules import load_rule_pack

ORIGIN = 1_000_000.0


class FakePrometheus:
    """Answers range queries from a table of (query fragment -> value at schedule time t)."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, float, float, float]] = []

    def instant(self, query: str, *, at: float) -> list[Sample]:
        raise AssertionError("the sampler must not make one request per sample")

    def range(self, query: str, *, start: float, end: float, step: float) -> list[Series]:
        self.calls.append((query, start, end, step))
        for fragment, value in self.answers.items():
            if fragment in query:
                points = []
                t = start
                while t <= end + 1e-9:
                    v = value(t - ORIGIN) if callable(value) else value
                    if v is not None:
                        points.append((t, float(v)))  # type: ignore[arg-type]
                    t += step
                return [Series(labels={}, points=tuple(points))]
        return []


def test_the_grid_holds_the_multiples_of_the_step_after_the_start_up_to_the_end() -> None:
    assert grid(0.0, 60.0, 15.0) == [15.0, 30.0, 45.0, 60.0]
    assert grid(17.0, 44.0, 15.0) == [30.0]
    assert grid(60.0, 60.0, 15.0) == []


def test_range_points_are_grouped_by_schedule_time() -> None:
    series = [Series(labels={"a": "2"}, points=((ORIGIN + 15, 2.0),)),
              Series(labels={"a": "1"}, points=((ORIGIN + 15, 1.0), (ORIGIN + 30, 3.0)))]  # fmt: skip
    assert by_time(series, origin=ORIGIN) == {15.0: [1.0, 2.0], 30.0: [3.0]}


def test_service_samples_come_from_four_range_queries_per_boundary() -> None:
    prometheus = FakePrometheus(
        {
            'status_code="STATUS_CODE_ERROR"': 2.0,
            'le="2500"': 7.0,
            "duration_milliseconds_count": 10.0,
            "calls_total": 10.0,
        }  # fmt: skip
    )
    sampler = Sampler(prometheus, namespace="ns", entry_point="frontend", origin_epoch_s=ORIGIN, step_s=15)
    samples = sampler.service(after=0.0, until=120.0)
    assert [s.t for s in samples] == [15.0 * k for k in range(1, 9)]
    assert len(prometheus.calls) == 4
    assert all(call[1] == ORIGIN + 15 and call[2] == ORIGIN + 120 for call in prometheus.calls)
    first = samples[0]
    assert (first.q, first.e, first.l) == (10.0, 0.2, 0.3)


def test_probe_samples_judge_every_grid_time_and_no_data_counts_as_healthy() -> None:
    probe = probe_of(
        CatalogProbe(query='rate(x{namespace="$namespace"}[2m])', healthy=Healthy(op="<", value=0.5)), "shop"
    )
    assert 'namespace="shop"' in probe.query
    prometheus = FakePrometheus({"rate(x": lambda t: None if t < 30 else (0.9 if t < 60 else 0.1)})
    sampler = Sampler(prometheus, namespace="shop", entry_point="frontend", origin_epoch_s=ORIGIN, step_s=15)
    samples = sampler.probe("f001", probe, after=0.0, until=75.0)
    assert [(s.t, s.healthy) for s in samples] == [
        (15.0, True), (30.0, False), (45.0, False), (60.0, True), (75.0, True)
    ]  # fmt: skip
    assert samples[0].value is None
    assert len(prometheus.calls) == 1


def test_without_an_admission_record_every_entry_may_be_drawn(tmp_path: Path) -> None:
    root = _project(tmp_path)
    admission = read_admission("online-boutique", root=root)
    assert admission.admitted is None
    assert admission.source == "none"


def _project(tmp: Path) -> Path:
    """A project root holding the Online Boutique catalog and topology and nothing else."""
    for part in ("fault_catalog/online-boutique", "manifests/online-boutique"):
        shutil.copytree(default_root() / part, tmp / part, ignore=shutil.ignore_patterns(ADMISSION_FILE))
    return tmp


def test_only_admitted_entries_with_an_unchanged_content_hash_are_drawn(tmp_path: Path) -> None:
    root = _project(tmp_path)
    catalog = load_catalog("online-boutique", root=root)
    first, second, third = catalog.entries[:3]
    records = (
        AdmissionRecord(
            id=first.id, content_hash=first.content_hash(), admitted=True, reasons=(), measurements=None
        ),
        AdmissionRecord(
            id=second.id, content_hash="edited-since", admitted=True, reasons=(), measurements=None
        ),
        AdmissionRecord(
            id=third.id, content_hash=third.content_hash(), admitted=False, reasons=(), measurements=None
        ),
    )
    procedure = Procedure(seed=1, warmup_s=300, window_s=300, recovery_s=300, rule_pack="1")
    document = AdmissionFile(app="online-boutique", procedure=procedure, entries=records)
    (root / "fault_catalog" / "online-boutique" / ADMISSION_FILE).write_text(render_admission(document))
    admission = read_admission("online-boutique", root=root)
    assert admission.admitted == frozenset({first.id})
    assert admission.source == "fault_catalog/online-boutique/admission.json"
    assert len(admission.sha256) == 64


def test_the_rule_groups_of_other_apps_are_not_evaluated() -> None:
    pack = load_rule_pack()
    mine = app_rules(pack, "online-boutique")
    groups = {rule.group for rule in mine.rules}
    assert "online-boutique" in groups
    assert not groups & {"train-ticket", "astronomy-shop"}
    assert len(mine.rules) < len(pack.rules)
    assert mine.sha256 == pack.sha256
