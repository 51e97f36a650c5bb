from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestrator.catalog.yamlfile import read_documents, validate
from orchestrator.errors import CatalogError


class _Thing(BaseModel):
    name: str
    size: int


def test_a_validation_error_names_file_line_field_and_value(tmp_path: Path) -> None:
    path = tmp_path / "thing.yaml"
    path.write_text("name: box\n\nsize: large\n")
    (document,) = read_documents(path)
    with pytest.raises(CatalogError) as raised:
        validate(_Thing, document)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line, problem.field, problem.value) == (str(path), 3, "size", "'large'")


def test_a_missing_field_points_at_its_parent(tmp_path: Path) -> None:
    path = tmp_path / "thing.yaml"
    path.write_text("name: box\n")
    (document,) = read_documents(path)
    with pytest.raises(CatalogError) as raised:
        validate(_Thing, document)
    assert [(p.field, p.message) for p in raised.value.problems] == [("size", "required field is missing")]


def test_broken_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: box\nsize: [1, 2\n")
    with pytest.raises(CatalogError) as raised:
        read_documents(path)
    assert raised.value.problems[0].line is not None
    assert "not valid YAML" in str(raised.value)


def test_a_file_that_is_not_utf8_is_refused_at_the_line_of_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "chaos.yaml"
    path.write_bytes(b"entries:\n  - id: ob-\xff\xfe\n")
    with pytest.raises(CatalogError) as caught:
        read_documents(path)
    assert str(caught.value) == f"cannot read a catalog file: {path}:2: not UTF-8: byte 0xff at offset 20"
