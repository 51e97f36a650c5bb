from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.faults import ConfigFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.errors import CatalogError, Problem

FIXTURES = Path(__file__).parent / "fixtures" / "shop"

FAMILY = """\
families:
  - each:
      - {target: cartservice, limit: 32Mi, mib: 32}
      - {target: currencyservice, limit: 16Mi, mib: 16}
    template:
      id: "ob-{{target}}-memory-limit-below-start"
      app: online-boutique
      category: configuration-bug
      mechanism: config
      target: "{{target}}"
      culprits: ["{{target}}"]
      artifact: "resources:{{target}}/limits/memory"
      description: "{{target}}'s memory limit is cut to {{limit}}, below what it needs to start."
      intended_update: "Trim {{target}}'s memory limit."
      defect: "{{target}} needs more than {{mib}} MiB to initialise."
      log: {service: "{{target}}", message: "memory limit {{limit}} reached during initialisation"}
      probe:
        query: sum(kube_deployment_status_replicas_available{namespace="$namespace", deployment="{{target}}"})
        healthy: {op: ">=", value: 1}
      remedy: {action: update_config, service: "{{target}}", field: resources/limits/memory, value: 128Mi}
      inject: {field: resources/limits/memory, value: "{{limit}}"}
"""


def _project(tmp_path: Path, text: str) -> Path:
    topology = tmp_path / "manifests" / "online-boutique" / "topology.yaml"
    topology.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "manifests" / "online-boutique" / "topology.yaml", topology)
    folder = tmp_path / "fault_catalog" / "online-boutique"
    folder.mkdir(parents=True)
    (folder / "limits.yaml").write_text(text)
    return tmp_path


def _problems(root: Path) -> list[Problem]:
    with pytest.raises(CatalogError) as raised:
        load_catalog("online-boutique", root=root)
    return raised.value.problems


def test_a_family_expands_into_one_ordinary_entry_per_row(tmp_path: Path) -> None:
    catalog = load_catalog("online-boutique", root=_project(tmp_path, FAMILY))
    assert [entry.id for entry in catalog.entries] == [
        "ob-cartservice-memory-limit-below-start",
        "ob-currencyservice-memory-limit-below-start",
    ]
    entry = catalog.by_id["ob-currencyservice-memory-limit-below-start"]
    assert isinstance(entry, ConfigFault)
    assert entry.target == "currencyservice" and entry.culprits == ("currencyservice",)
    assert str(entry.artifact) == "resources:currencyservice/limits/memory"
    assert entry.log.message == "memory limit 16Mi reached during initialisation"
    assert entry.defect == "currencyservice needs more than 16 MiB to initialise."
    assert 'deployment="currencyservice"' in entry.probe.query
    assert entry.inject.value == "16Mi"
    assert catalog.scope(entry) == frozenset({"currencyservice", "frontend"})
    path = str(tmp_path / "fault_catalog" / "online-boutique" / "limits.yaml")
    assert [str(catalog.origin(e)) for e in catalog.entries] == [f"{path}:3", f"{path}:4"]


def test_a_whole_placeholder_takes_the_rows_value_with_its_type(tmp_path: Path) -> None:
    text = FAMILY.replace("value: 1}", 'value: "{{floor}}"}').replace(
        "value: 128Mi}", 'value: "{{restore}}"}'
    )
    text = text.replace("mib: 32}", "mib: 32, floor: 2, restore: 128Mi}")
    text = text.replace("mib: 16}", "mib: 16, floor: 1, restore: null}")
    catalog = load_catalog("online-boutique", root=_project(tmp_path, text))
    cart = catalog.by_id["ob-cartservice-memory-limit-below-start"]
    currency = catalog.by_id["ob-currencyservice-memory-limit-below-start"]
    assert (cart.probe.healthy.value, cart.remedy.value) == (2.0, "128Mi")
    assert (currency.probe.healthy.value, currency.remedy.value) == (1.0, None)


def test_families_and_entries_share_one_file_and_ids_stay_unique(tmp_path: Path) -> None:
    good = (FIXTURES / "fault_catalog" / "online-boutique" / "good.yaml").read_text()
    catalog = load_catalog("online-boutique", root=_project(tmp_path, good + FAMILY))
    assert (
        len(catalog)
        == len(load_catalog(paths=[FIXTURES / "fault_catalog" / "online-boutique" / "good.yaml"])) + 2
    )
    doubled = FAMILY.replace(
        "- {target: currencyservice, limit: 16Mi, mib: 16}", "- {target: cartservice, limit: 16Mi, mib: 16}"
    )
    problems = [p for p in _problems(_project(tmp_path / "b", doubled)) if "duplicate id" in p.message]
    assert [(p.line, p.field) for p in problems] == [
        (6, "families.0.template.id"),
        (6, "families.0.template.id"),
    ]
    assert problems[0].value == "'ob-cartservice-memory-limit-below-start'"
    assert problems[0].message.endswith("(row 0: ob-cartservice-memory-limit-below-start)")
    assert "also at" in problems[0].message and ":4" in problems[0].message


def test_an_unknown_parameter_is_reported_at_its_template_line(tmp_path: Path) -> None:
    text = FAMILY.replace("more than {{mib}} MiB", "more than {{mb}} MiB")
    problems = _problems(_project(tmp_path, text))
    path = tmp_path / "fault_catalog" / "online-boutique" / "limits.yaml"
    assert [str(p).partition(" = ")[0] for p in problems] == [f"{path}:15: families.0.template.defect"] * 2
    assert problems[0].value == "'{{target}} needs more than {{mb}} MiB to initialise.'"
    assert problems[0].message == "unknown parameter 'mb' (row 0 has limit, mib, target)"


def test_an_expanded_entry_is_checked_like_any_other_and_names_its_row(tmp_path: Path) -> None:
    text = FAMILY.replace("{target: currencyservice,", "{target: currency-service,")
    problems = _problems(_project(tmp_path, text))
    fields = sorted({p.field for p in problems})
    assert "families.0.template.target" in fields
    target = next(p for p in problems if p.field == "families.0.template.target")
    assert (target.line, target.value) == (10, "'currency-service'")
    assert "is not a service of online-boutique" in target.message
    assert target.message.endswith("(row 1: ob-currency-service-memory-limit-below-start)")


def test_a_model_error_of_an_expanded_entry_shows_the_expanded_value(tmp_path: Path) -> None:
    text = FAMILY.replace("category: configuration-bug", "category: '{{target}}-bug'")
    problems = _problems(_project(tmp_path, text))
    assert [(p.line, p.field, p.value) for p in problems] == [
        (8, "families.0.template.category", "'cartservice-bug'"),
        (8, "families.0.template.category", "'currencyservice-bug'"),
    ]
    assert problems[1].message.endswith("(row 1: ob-currencyservice-memory-limit-below-start)")


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        (
            "families:\n  - each: []\n    template: {id: x}\n",
            "families.0.each",
            "non-empty list of parameter rows",
        ),
        ("families:\n  - each: [{a: 1}]\n", "families.0.template", "non-empty mapping (an entry)"),
        (
            "families:\n  - each: [3]\n    template: {id: x}\n",
            "families.0.each.0",
            "a row is a non-empty mapping",
        ),
        (
            "families:\n  - each: [{a: 1}]\n    template: {id: x}\n    vars: {}\n",
            "families.0.vars",
            "unknown field",
        ),
        (
            "families:\n  - each: [{a-b: 1}]\n    template: {id: x}\n",
            "families.0.each.0",
            "identifiers; not a-b",
        ),
        (
            "families:\n  - each: [{a: [1]}]\n    template: {id: 'x{{a}}'}\n",
            "families.0.template.id",
            "not text",
        ),
        ("families: {}\n", "families", "non-empty list of families"),
    ],
)
def test_a_malformed_family_is_one_located_problem(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    (problem,) = _problems(_project(tmp_path, text))
    assert problem.field == field
    assert message in problem.message
    assert problem.line is not None
