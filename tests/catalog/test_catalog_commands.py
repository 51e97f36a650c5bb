from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from orchestrator.catalog.commands import catalog_actions
from orchestrator.catalog.faults import Category, Mechanism
from orchestrator.cli import build_parser, main

FIXTURES = Path(__file__).parent / "fixtures"
CATALOG = FIXTURES / "shop" / "fault_catalog" / "online-boutique"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def test_validate_of_a_good_file_says_ok_with_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "validate", str(CATALOG / "good.yaml")]) == 0
    assert capsys.readouterr().out == "ok: 3 entries in 1 files\n"


def test_validate_without_paths_checks_every_committed_app(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "validate"]) == 0
    counts = re.fullmatch(r"ok: (\d+) entries in (\d+) files\n", capsys.readouterr().out)
    assert counts is not None
    assert int(counts[1]) >= 32 and int(counts[2]) >= 3


def test_validate_prints_three_mistakes_with_lines_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before, cwd_before = _tree(FIXTURES), os.listdir(tmp_path)
    bad = CATALOG / "bad-three-mistakes.yaml"
    assert main(["catalog", "validate", str(CATALOG / "good.yaml"), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{bad}:3: faults.0.description: required field is missing",
        f"{bad}:18: faults.1.category = 'network-bug': Input should be 'code-bug', 'dependency', "
        "'infrastructure', 'deployment', 'configuration-bug', 'database-network' or 'authentication'",
        f"{bad}:34: faults.2.target = 'checkoutservice': 'checkoutservice' is not a service of "
        "online-boutique (cartservice, currencyservice, frontend, loadgenerator, redis-cart)",
    ]
    assert "3 problem(s) in 1 file(s)" in captured.err
    assert _tree(FIXTURES) == before and os.listdir(tmp_path) == cwd_before


def test_validate_reports_a_duplicate_id_at_both_places(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "fault_catalog" / "online-boutique"
    folder.mkdir(parents=True)
    (tmp_path / "manifests" / "online-boutique").mkdir(parents=True)
    topology = FIXTURES / "shop" / "manifests" / "online-boutique" / "topology.yaml"
    (tmp_path / "manifests" / "online-boutique" / "topology.yaml").write_text(topology.read_text())
    (folder / "one.yaml").write_text((CATALOG / "good.yaml").read_text())
    (folder / "two.yaml").write_text((CATALOG / "good.yaml").read_text())
    assert main(["catalog", "validate", str(folder)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert f"{folder / 'one.yaml'}:2: faults.0.id = 'ob-fixture-cart-release': duplicate id" in lines[0]
    assert lines[0].endswith(f"also at {folder / 'two.yaml'}:2")


def test_list_shows_every_online_boutique_entry_and_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "list", "--app", "online-boutique"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^│ (ob-[a-z0-9-]+)\s+│ ([a-z-]+)\s+│ ([a-z]+)\s+│", out, flags=re.MULTILINE)
    assert len(rows) >= 30
    assert {row[1] for row in rows} == {category.value for category in Category}
    assert {row[2] for row in rows} == {mechanism.value for mechanism in Mechanism}
    per_category = dict(re.findall(r"^│ ([a-z-]+)\s+│\s+(\d+) │(?:\s+\d+ │)?$", out, flags=re.MULTILINE))
    assert sum(int(per_category[category.value]) for category in Category) == len(rows)
    assert sum(int(per_category[mechanism.value]) for mechanism in Mechanism) == len(rows)


def test_list_of_an_unknown_app_exits_2_naming_the_known_apps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "list", "--app", "pet-store"]) == 2
    assert "known apps: astronomy-shop, online-boutique, train-ticket" in capsys.readouterr().err


def test_admit_and_export_ctk_add_themselves_to_the_catalog_command_after_its_own_actions() -> None:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(catalog_actions(commands).choices) == ["validate", "list", "admit", "export-ctk"]


def test_list_shows_each_entrys_admission_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "list", "--app", "astronomy-shop"]) == 0
    out = capsys.readouterr().out
    verdicts = dict(re.findall(r"^│ (as-[a-z0-9-]+)\s+│.*│ ([a-z -]+?)\s+│$", out, flags=re.MULTILINE))
    assert verdicts["as-active-site-outage"] == "admitted"
    assert set(verdicts.values()) <= {"admitted", "rejected", "stale", "not screened"}
    admitted = sum(1 for verdict in verdicts.values() if verdict == "admitted")
    assert f"astronomy-shop: {len(verdicts)} entries, {admitted} admitted" in out


def test_list_counts_entries_and_admitted_entries_per_category_and_mechanism(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["catalog", "list", "--app", "online-boutique"]) == 0
    out = capsys.readouterr().out
    verdicts = dict(re.findall(r"^│ (ob-[a-z0-9-]+)\s+│.*│ ([a-z -]+?)\s+│$", out, flags=re.MULTILINE))
    rows = dict(
        (name, (int(entries), int(admitted)))
        for name, entries, admitted in re.findall(
            r"^│ ([a-z-]+)\s+│\s+(\d+) │\s+(\d+) │$", out, flags=re.MULTILINE
        )
    )
    categories = [c.value for c in Category]
    mechanisms = [m.value for m in Mechanism]
    assert set(rows) == {*categories, *mechanisms}
    admitted = sum(1 for verdict in verdicts.values() if verdict == "admitted")
    for names in (categories, mechanisms):
        assert sum(rows[name][0] for name in names) == len(verdicts)
        assert sum(rows[name][1] for name in names) == admitted
