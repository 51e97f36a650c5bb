"""The vocabularies are leaves: any layer may import them because they import nothing else of the project."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "orchestrator" / "vocabulary"


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def test_a_vocabulary_module_imports_only_the_standard_library_and_other_vocabularies() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 4
    for path in modules:
        project = {name for name in _imported(path) if name.split(".")[0] == "orchestrator"}
        assert {name for name in project if not name.startswith("orchestrator.vocabulary")} == set(), (
            path.name
        )
        third_party = {name.split(".")[0] for name in _imported(path)} - {"orchestrator", "__future__"}
        assert third_party <= {"re", "dataclasses", "collections", "typing"}, path.name
