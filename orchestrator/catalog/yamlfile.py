"""YAML files read with the line of every value, so validation errors can name file, line, field and value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from orchestrator.errors import CatalogError, Problem

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Document:
    """One YAML document: its plain data and the 1-based line where each path's value starts."""

    path: Path
    data: Any
    lines: dict[Loc, int]

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor that has one."""
        for cut in range(len(loc), -1, -1):
            line = self.lines.get(loc[:cut])
            if line is not None:
                return line
        return None

    def value_at(self, loc: Loc) -> Any:
        node: Any = self.data
        for key in loc:
            in_mapping = isinstance(node, dict) and key in node
            in_sequence = isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
            if not (in_mapping or in_sequence):
                return None
            node = node[key]
        return node


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
            _index(value_node, (*loc, key), lines)
            lines.setdefault((*loc, key), key_node.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _index(item, (*loc, position), lines)


def read_documents(path: Path) -> list[Document]:
    """Read every document of a YAML file; raise ``CatalogError`` naming the line that stops it parsing."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read file: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw.count(b"\n", 0, exc.start) + 1
        why = f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        problem = Problem(str(path), bad_line, "", "", why)
        raise CatalogError("cannot read a catalog file", [problem]) from None
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        datas = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = Problem(str(path), line, "", "", f"not valid YAML: {getattr(exc, 'problem', exc)}")
        raise CatalogError(f"{path}: not valid YAML", [problem]) from exc
    documents = []
    for node, data in zip(nodes, datas, strict=True):
        lines: dict[Loc, int] = {}
        if node is not None:
            _index(node, (), lines)
        documents.append(Document(path=path, data=data, lines=lines))
    return documents


def problems_from(error: ValidationError, document: Document, *, prefix: Loc = ()) -> list[Problem]:
    """Translate a pydantic error into located problems, one per failing field."""
    problems = []
    for item in error.errors():
        loc: Loc = (*prefix, *(part for part in item["loc"] if isinstance(part, str | int)))
        field = ".".join(str(part) for part in loc)
        value = document.value_at(loc)
        shown = "" if value is None or isinstance(value, dict | list) else repr(value)
        message = item["msg"]
        if item["type"] == "missing":
            message = "required field is missing"
        elif item["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(Problem(str(document.path), document.line_of(loc), field, shown, message))
    return problems


def validate(model: type[M], document: Document) -> M:
    """Validate a document against a model; raise ``CatalogError`` with every problem found."""
    try:
        return model.model_validate(document.data)
    except ValidationError as exc:
        raise CatalogError(f"{document.path}: invalid", problems_from(exc, document)) from exc
