"""docs/metrics.md says what the scorer computes: these tests fail when the document and the code drift."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from orchestrator.bundle import records
from orchestrator.bundle.building import sample_manifest
from orchestrator.bundle.reader import Bundle, bundle_from_records
from orchestrator.bundle.records import Record, RunEnded
from orchestrator.catalog import faults
from orchestrator.score.scorecard import score_bundle, scorecard_json
from orchestrator.score.stages import OUTCOMES
from orchestrator.score.table import summary_rows
from orchestrator.vocabulary.artifacts import ARTIFACT_KINDS
from tests.score.scenario import act, alert, fault, probes, report, states, workload

ROOT = Path(__file__).parents[2]
DOCUMENT = ROOT / "docs" / "metrics.md"
_HEADING = re.compile(r"^(#+) (.+)$")
_CODE_CELL = re.compile(r"^`([^`]+)`$")
# A citation names the document and then quoted section names: docs/metrics.md, "Inputs" and "Attribution".
_CITATION = re.compile(r'docs/metrics\.md,((?:\s*(?:and\s+)?"[^"]+")+)')


def _text() -> str:
    return DOCUMENT.read_text(encoding="utf-8")


def _headings() -> list[str]:
    return [match.group(2) for line in _text().splitlines() if (match := _HEADING.match(line))]


def _section(title: str) -> list[str]:
    """The lines under the heading ``title``, up to the next heading of the same or a higher level."""
    lines = _text().splitlines()
    for index, line in enumerate(lines):
        match = _HEADING.match(line)
        if match and match.group(2) == title:
            level = len(match.group(1))
            body: list[str] = []
            for following in lines[index + 1 :]:
                other = _HEADING.match(following)
                if other and len(other.group(1)) <= level:
                    break
                body.append(following)
            return body
    raise AssertionError(f"docs/metrics.md has no heading {title!r}")


def _tables(title: str) -> list[list[str]]:
    """Per table of a section, the code-formatted names in its first column, top to bottom."""
    tables: list[list[str]] = []
    current: list[str] | None = None
    for line in _section(title):
        if not line.startswith("|"):
            current = None
            continue
        if current is None:
            current = []
            tables.append(current)
        match = _CODE_CELL.match(line.strip("|").split(" | ")[0].strip())
        if match:
            current.append(match.group(1))
    return tables


def _sources() -> list[Path]:
    """The code, the tests and the documentation that may cite the scoring specification."""
    return [
        *ROOT.glob("orchestrator/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        ROOT / "README.md",
        *ROOT.glob("*/README.md"),
        *ROOT.glob("docs/*.md"),
    ]


def _worked_example() -> list[Record]:
    # The bundle of test_golden.test_the_json_has_exactly_the_metrics_keys_and_is_byte_identical_twice.
    return [
        *fault("f1", inject=0, revert=600),
        alert("a1", start=60),
        report(120, "INC-1", ["a1"], culprits=["cartservice"], artifact="config:cartservice/env/REDIS_ADDR"),
        act(130, "cartservice"),
        *probes("f1", [(120, False), (240, True)]),
        states("start", 0, workload("emailservice")),
        states("end", 1800, workload("emailservice")),
    ]


def _bundle(records: list[Record], *, sandboxed: bool = True) -> Bundle:
    manifest = sample_manifest(sandboxed=sandboxed)
    return bundle_from_records([manifest, *records, RunEnded(t=1800.0)], path=Path("memory"))


def test_the_json_keys_the_document_lists_are_the_keys_the_scorer_prints() -> None:
    keys, outcome_keys = _tables("The `--json` document")
    unsandboxed = json.loads(scorecard_json(score_bundle(_bundle(_worked_example(), sandboxed=False))))
    sandboxed = json.loads(scorecard_json(score_bundle(_bundle(_worked_example()))))
    assert list(unsandboxed) == keys
    assert unsandboxed["sandboxed"] is False
    # "sandboxed" appears only for an unsandboxed run.
    assert list(sandboxed) == [key for key in keys if key != "sandboxed"]
    assert list(sandboxed["outcomes"][0]) == outcome_keys


def test_the_artifact_kinds_the_document_lists_are_the_code_vocabulary() -> None:
    (kinds,) = _tables("Responsible artifacts")
    assert tuple(kinds) == ARTIFACT_KINDS
    assert records.ARTIFACT_KINDS is faults.ARTIFACT_KINDS is ARTIFACT_KINDS  # one vocabulary, no copies


def test_the_outcomes_the_document_lists_are_the_scorer_outcomes() -> None:
    (outcomes,) = _tables("Outcome per fault")
    assert tuple(outcomes) == OUTCOMES


def test_the_table_rows_the_document_lists_are_the_rows_the_scorer_prints() -> None:
    (rows,) = _tables("The score table")
    card = score_bundle(_bundle(_worked_example()))
    assert rows == [name for name, _ in summary_rows(card)]


def test_the_worked_example_prints_exactly_the_json_the_document_shows() -> None:
    body = "\n".join(_section("Worked example"))
    shown = re.search(r"```json\n(.*?)```", body, re.DOTALL)
    assert shown is not None, "the worked example shows no JSON document"
    assert scorecard_json(score_bundle(_bundle(_worked_example()))) == shown.group(1)


def test_every_test_the_document_cites_exists() -> None:
    defined = set()
    for path in (ROOT / "tests" / "score").glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    cited = set(re.findall(r"`(test_\w+)`", _text()))
    assert cited, "the document cites no test"
    assert cited <= defined


def test_every_section_the_code_and_docs_cite_is_a_heading_of_the_document() -> None:
    headings = set(_headings())
    cited: dict[str, set[str]] = {}
    for path in _sources():
        for match in _CITATION.finditer(path.read_text(encoding="utf-8")):
            for name in re.findall(r'"([^"]+)"', match.group(1)):
                cited.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert cited, "nothing cites a section of docs/metrics.md"
    assert {name: where for name, where in cited.items() if name not in headings} == {}


def test_nothing_cites_a_metrics_file_outside_the_repository() -> None:
    external = "METRICS" + ".md"  # spelled apart so that this file does not cite it
    citing = sorted(
        str(path.relative_to(ROOT)) for path in _sources() if external in path.read_text(encoding="utf-8")
    )
    assert citing == []
