"""Parameterised families of catalog entries: one template, one row of parameters per entry.

A catalog file may hold, beside ``faults``, a list ``families``; each family is a mapping

```yaml
families:
  - each:                                   # one row per entry: parameter name -> value
      - {caller: frontend, callee: cartservice, var: CART_SERVICE_ADDR}
    template:                               # an ordinary entry whose text may name parameters
      id: "ob-{{caller}}-{{callee}}-port"
      description: "{{caller}} dials {{callee}} on a port nothing listens on ..."
```

Every string of the template has each ``{{name}}`` replaced by the row's value of ``name``; a string that is
exactly one ``{{name}}`` becomes the value itself (a number, a list, null). The expanded mapping is then an
entry like any other: validated, cross-checked and admitted on its own. Nothing here reads the topology.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator.catalog.yamlfile import Document, Loc
from orchestrator.errors import Problem

PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELDS = frozenset({"each", "template"})
_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class Row:
    """One expanded entry of a family: its data, and a document in which ``loc`` names the template's
    fields with the row's values (so problems show the expanded value at the template's line)."""

    data: dict[str, Any]
    document: Document
    loc: Loc
    row: int


def expand(document: Document, index: int, family: Any) -> tuple[list[Row], list[Problem]]:
    """The entries of ``families[index]`` of ``document``, or the problems that stop its expansion."""
    where: Loc = ("families", index)
    problems: list[Problem] = []
    if not isinstance(family, dict):
        return [], [_problem(document, where, "a family is a mapping with 'each' (rows) and 'template'")]
    for key in sorted(set(family) - _FIELDS, key=str):
        problems.append(
            _problem(document, (*where, str(key)), "unknown field (a family has each and template)")
        )
    template, rows = family.get("template"), family.get("each")
    if not isinstance(template, dict) or not template:
        problems.append(
            _problem(document, (*where, "template"), "a non-empty mapping (an entry) is required")
        )
    if not isinstance(rows, list) or not rows:
        problems.append(
            _problem(document, (*where, "each"), "a non-empty list of parameter rows is required")
        )
    if problems:
        return [], problems
    assert isinstance(template, dict) and isinstance(rows, list)
    expanded: list[Row] = []
    for position, row in enumerate(rows):
        row_loc: Loc = (*where, "each", position)
        if not isinstance(row, dict) or not row:
            problems.append(
                _problem(document, row_loc, "a row is a non-empty mapping of parameter names to values")
            )
            continue
        bad = sorted(str(name) for name in row if not isinstance(name, str) or not _NAME.match(name))
        if bad:
            problems.append(
                _problem(document, row_loc, f"parameter names are identifiers; not {', '.join(bad)}")
            )
            continue
        found: list[tuple[Loc, str]] = []
        data = _fill(template, row, (), found)
        if found:
            known = ", ".join(sorted(row))
            for loc, message in found:
                problems.append(
                    _problem(document, (*where, "template", *loc), f"{message} (row {position} has {known})")
                )
            continue
        assert isinstance(data, dict)
        view = Document(
            path=document.path, data={"families": {index: {"template": data}}}, lines=document.lines
        )
        expanded.append(Row(data=data, document=view, loc=(*where, "template"), row=position))
    return expanded, problems


def _fill(value: Any, row: dict[str, Any], loc: Loc, found: list[tuple[Loc, str]]) -> Any:
    if isinstance(value, dict):
        return {key: _fill(item, row, (*loc, key), found) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, row, (*loc, position), found) for position, item in enumerate(value)]
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER.fullmatch(value)
    if whole is not None and whole.group(1) in row:
        return row[whole.group(1)]

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in row:
            found.append((loc, f"unknown parameter {name!r}"))
            return match.group(0)
        given = row[name]
        if given is None or not isinstance(given, _SCALARS):
            found.append((loc, f"parameter {name!r} is not text or a number: it cannot be part of a string"))
            return match.group(0)
        return str(given)

    return PLACEHOLDER.sub(one, value)


def _problem(document: Document, loc: Loc, message: str) -> Problem:
    value = document.value_at(loc)
    shown = "" if value is None or isinstance(value, dict | list) else repr(value)
    field = ".".join(str(part) for part in loc)
    return Problem(str(document.path), document.line_of(loc), field, shown, message)
