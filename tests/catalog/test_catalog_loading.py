from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.catalog.faults import Category
from orchestrator.catalog.loading import Catalog, load_catalog
from orchestrator.errors import CatalogError, Problem

FIXTURES = Path(__file__).parent / "fixtures" / "shop"
CATALOG = FIXTURES / "fault_catalog" / "online-boutique"
GOOD = CATALOG / "good.yaml"
BAD = CATALOG / "bad-three-mistakes.yaml"

Project = Callable[..., Path]


def _good_entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = yaml.safe_load(GOOD.read_text())["faults"]
    return entries


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A project folder with the fixture topology; call it with ``name=[entries]`` to write catalog files."""
    topology = tmp_path / "manifests" / "online-boutique" / "topology.yaml"
    topology.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "manifests" / "online-boutique" / "topology.yaml", topology)

    def write(app: str = "online-boutique", **files: list[dict[str, Any]]) -> Path:
        folder = tmp_path / "fault_catalog" / app
        folder.mkdir(parents=True, exist_ok=True)
        for name, entries in files.items():
            (folder / f"{name}.yaml").write_text(yaml.safe_dump({"faults": entries}, sort_keys=False))
        return tmp_path

    return write


@pytest.fixture(scope="module")
def committed() -> Catalog:
    return load_catalog()


def _problems(root: Path, app: str | None = "online-boutique") -> list[Problem]:
    with pytest.raises(CatalogError) as raised:
        load_catalog(app, root=root)
    return raised.value.problems


def test_every_committed_catalog_validates(committed: Catalog) -> None:
    catalog = committed
    assert len(catalog) >= 32
    assert set(catalog.apps()) >= {"online-boutique"}
    for entry in catalog.entries:
        assert entry.target in catalog.scope(entry)


def test_the_online_boutique_catalog_spans_all_seven_categories_and_three_mechanisms(
    committed: Catalog,
) -> None:
    catalog = committed.for_app("online-boutique")
    assert len(catalog) >= 32
    assert catalog.categories() == tuple(Category)
    assert {entry.mechanism.value for entry in catalog.entries} == {"code", "config", "chaos"}
    assert all(entry.id.startswith("ob-") for entry in catalog.entries)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_every_committed_probe_is_valid_promql(committed: Catalog, tmp_path: Path) -> None:
    catalog = committed
    rules = [
        {
            "record": f"probe:{entry.id.replace('-', '_')}",
            "expr": entry.probe.query.replace("$namespace", "ns"),
        }
        for entry in catalog.entries
    ]
    path = tmp_path / "probes.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "probes", "rules": rules}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(rules)} rules found" in result.stdout


def test_entries_are_sorted_by_id_and_found_by_id() -> None:
    catalog = load_catalog(paths=[GOOD])
    ids = [entry.id for entry in catalog.entries]
    assert ids == sorted(ids) == sorted(catalog.by_id)
    assert catalog.by_id["ob-fixture-cart-redis-port"].target == "cartservice"
    assert str(catalog.origin("ob-fixture-cart-release")) == f"{GOOD}:2"


def test_the_affected_scope_comes_from_the_topology_not_the_file(committed: Catalog) -> None:
    catalog = load_catalog(paths=[GOOD])
    assert catalog.scope("ob-fixture-cart-redis-port") == {"cartservice", "frontend"}
    assert committed.scope("ob-redis-cart-pod-failure") >= {
        "redis-cart",
        "cartservice",
        "checkoutservice",
        "frontend",
    }
    assert "loadgenerator" not in committed.scope("ob-redis-cart-pod-failure")


def test_the_content_hash_changes_with_any_field_and_only_then(project: Project) -> None:
    entries = _good_entries()
    first = load_catalog("online-boutique", root=project(a=entries)).content_hash()
    again = load_catalog("online-boutique", root=project(a=copy.deepcopy(entries))).content_hash()
    entries[1]["description"] += " Carts stay empty."
    changed = load_catalog("online-boutique", root=project(a=entries)).content_hash()
    assert first == again != changed


def test_three_different_mistakes_are_all_reported_with_their_lines() -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(paths=[GOOD, BAD])
    found = [(p.file, p.line, p.field) for p in raised.value.problems]
    assert found == [
        (str(BAD), 3, "faults.0.description"),
        (str(BAD), 18, "faults.1.category"),
        (str(BAD), 34, "faults.2.target"),
    ]
    assert raised.value.problems[1].value == "'network-bug'"


def test_a_duplicate_id_across_files_is_reported_at_both_places(project: Project) -> None:
    entries = _good_entries()
    root = project(a=entries, b=[entries[0]])
    problems = [p for p in _problems(root) if "duplicate id" in p.message]
    a, b = (str(root / "fault_catalog" / "online-boutique" / f"{name}.yaml") for name in "ab")
    assert [(p.file, p.line, p.field) for p in problems] == [(a, 2, "faults.0.id"), (b, 2, "faults.0.id")]
    assert f"also at {b}:2" in problems[0].message and f"also at {a}:2" in problems[1].message


def test_problems_of_several_files_are_reported_together(project: Project) -> None:
    entries = _good_entries()
    broken = copy.deepcopy(entries[1])
    broken.update(id="ob-second", category="nonsense")
    other = copy.deepcopy(entries[2])
    other.update(id="ob-third", target="no-such-service")
    problems = _problems(project(a=[entries[0], broken], b=[other]))
    assert {(Path(p.file).name, p.field) for p in problems} == {
        ("a.yaml", "faults.1.category"),
        ("b.yaml", "faults.0.target"),
    }


def test_an_entry_in_the_wrong_app_folder_is_reported(project: Project) -> None:
    entries = _good_entries()
    entries[0]["app"] = "train-ticket"
    (problem,) = _problems(project(a=entries))
    assert (problem.field, problem.value) == ("faults.0.app", "'train-ticket'")
    assert "online-boutique" in problem.message


def test_a_union_error_names_the_field_without_the_mechanism_tag(project: Project) -> None:
    entries = _good_entries()
    entries[0]["inject"]["image_tag"] = "v0.10.6 hotfix"
    entries[2]["mechanism"] = "sabotage"
    root = project(a=entries)
    lines = (root / "fault_catalog" / "online-boutique" / "a.yaml").read_text().splitlines()
    tag_line = 1 + next(n for n, text in enumerate(lines) if "image_tag:" in text)
    mechanism_line = 1 + next(n for n, text in enumerate(lines) if "mechanism: sabotage" in text)
    problems = _problems(root)
    assert [(p.field, p.line) for p in problems] == [
        ("faults.0.inject.image_tag", tag_line),
        ("faults.2.mechanism", mechanism_line),
    ]
    assert "code, config or chaos" in problems[1].message


def test_names_missing_from_the_topology_are_reported_where_they_are_written(project: Project) -> None:
    entries = _good_entries()
    entries[1]["culprits"] = ["cartservice", "cart-db"]
    entries[1]["remedy"]["service"] = "cart-svc"
    entries[2]["artifact"] = "network:cartservice->redis-main"
    problems = _problems(project(a=entries))
    assert [p.field for p in problems] == [
        "faults.1.culprits.1",
        "faults.1.remedy.service",
        "faults.2.artifact",
        "faults.2.inject.spec.target",
    ]
    assert "'redis-main', not a service" in problems[2].message
    assert "selects 'redis-cart' but the artifact names 'redis-main'" in problems[3].message


def test_a_log_line_from_a_service_that_cannot_see_the_fault_is_reported(project: Project) -> None:
    entries = _good_entries()
    entries[1]["log"]["service"] = "currencyservice"
    (problem,) = _problems(project(a=entries))
    assert problem.field == "faults.1.log.service"
    assert "cannot see cartservice's symptoms" in problem.message


def test_a_probe_must_be_namespaced_and_use_only_contract_series(project: Project) -> None:
    entries = _good_entries()
    entries[1]["probe"]["query"] = (
        'sum(kube_deployment_status_replicas_available{namespace="online-boutique"})'
    )
    entries[2]["probe"]["query"] = 'sum(rate(http_requests_total{namespace="$namespace", job="$job"}[2m]))'
    messages = sorted(p.message for p in _problems(project(a=entries)))
    assert len(messages) == 3
    assert "must select namespace" in messages[0]
    assert "'http_requests_total' is not in the series contract" in messages[1]
    assert "unknown variable $job" in messages[2]


def test_a_release_must_name_the_target_and_the_build_tag(project: Project) -> None:
    entries = _good_entries()
    entries[0]["artifact"] = "release:cartservice@v0.10.6-2"
    entries[0]["inject"]["behaviour"]["ops"] = ["hipstershop.CartService/Checkout"]
    problems = _problems(project(a=entries))
    assert [p.field for p in problems] == ["faults.0.artifact", "faults.0.inject.behaviour.ops.0"]
    assert "release:cartservice@v0.10.6-1" in problems[0].message


def test_a_config_artifact_must_describe_the_field_the_recipe_changes(project: Project) -> None:
    entries = _good_entries()
    entries[1]["artifact"] = "config:cartservice/env/REDIS_HOST"
    (problem,) = _problems(project(a=entries))
    assert problem.field == "faults.1.artifact"
    assert "config:cartservice/env/REDIS_ADDR or credentials:cartservice/env/REDIS_ADDR" in problem.message


def test_a_config_recipe_must_name_the_workload_kind_the_topology_runs(project: Project) -> None:
    entries = _good_entries()
    entries[1]["inject"]["object"] = "statefulset"  # cartservice runs as a Deployment
    (problem,) = _problems(project(a=entries))
    assert problem.field == "faults.1.inject.object"
    assert "runs cartservice as a Deployment, not a statefulset" in problem.message


def test_a_chaos_artifact_must_fit_the_recipe_and_its_peer_selector(project: Project) -> None:
    entries = _good_entries()
    entries[2]["artifact"] = "network:cartservice->currencyservice"
    entries[2]["culprits"] = ["cartservice", "currencyservice"]
    (problem,) = _problems(project(a=entries))
    assert problem.field == "faults.2.inject.spec.target"
    entries[2]["artifact"] = "dns:cartservice"
    (problem,) = _problems(project(a=entries))
    assert "does not fit NetworkChaos" in problem.message


def test_a_missing_topology_is_reported(project: Project) -> None:
    root = project(a=_good_entries())
    (root / "manifests" / "online-boutique" / "topology.yaml").unlink()
    (problem,) = _problems(root)
    assert problem.file.endswith("manifests/online-boutique/topology.yaml")


def test_a_file_that_is_not_a_list_of_faults_is_reported(project: Project) -> None:
    root = project(a=_good_entries())
    (root / "fault_catalog" / "online-boutique" / "b.yaml").write_text("entries:\n  - id: x\n")
    problems = _problems(root)
    assert [(p.line, p.field, p.message) for p in problems] == [
        (1, "faults", "a non-empty list of fault entries is required"),
        (2, "entries", "unknown field"),
    ]


def test_an_unknown_app_names_the_apps_of_its_project(project: Project) -> None:
    with pytest.raises(CatalogError, match="unknown app 'pet-store'; known apps: online-boutique$"):
        load_catalog("pet-store", root=project(a=_good_entries()))
    with pytest.raises(CatalogError, match="known apps: astronomy-shop, online-boutique, train-ticket$"):
        load_catalog("pet-store")


def test_broken_yaml_is_reported_with_its_line_beside_the_other_files_problems(project: Project) -> None:
    entries = _good_entries()
    entries[0]["category"] = "nonsense"
    root = project(a=entries)
    (root / "fault_catalog" / "online-boutique" / "b.yaml").write_text("faults:\n  - id: [unclosed\n")
    problems = _problems(root)
    assert [(Path(p.file).name, p.field) for p in problems] == [
        ("a.yaml", "faults.0.category"),
        ("b.yaml", ""),
    ]
    assert problems[1].line == 3 and "not valid YAML" in problems[1].message


def test_an_artifact_kind_that_does_not_fit_the_mechanism_is_reported_on_the_artifact(
    project: Project,
) -> None:
    entries = _good_entries()
    entries[1]["artifact"] = "pod:cartservice"
    (problem,) = _problems(project(a=entries))
    assert (problem.field, problem.value) == ("faults.1.artifact", "'pod:cartservice'")
    assert problem.message.startswith("artifact kind 'pod' does not fit a config fault")


def test_a_zone_drain_blames_the_zone_of_its_spec_or_else_of_its_targets_site(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    topology = tmp_path / "manifests" / "astronomy-shop" / "topology.yaml"
    topology.parent.mkdir(parents=True)
    shutil.copy(root / "manifests" / "astronomy-shop" / "topology.yaml", topology)
    outage = load_catalog("astronomy-shop").by_id["as-active-site-outage"].model_dump(mode="json")
    assert outage["inject"] == {"kind": "drain-zone", "spec": {}}
    folder = tmp_path / "fault_catalog" / "astronomy-shop"
    folder.mkdir(parents=True)

    def problems(**changes: Any) -> list[str]:
        entry = {**copy.deepcopy(outage), **changes}
        (folder / "chaos.yaml").write_text(yaml.safe_dump({"faults": [entry]}, sort_keys=False))
        try:
            load_catalog("astronomy-shop", root=tmp_path)
        except CatalogError as raised:
            return [f"{p.field}: {p.message}" for p in raised.problems]
        return []

    assert problems() == []
    assert problems(artifact="node:zone/zone-b") == [
        "faults.0.artifact: must name the zone of 'frontend-proxy''s site 'primary' (zone-a)"
    ]
    assert problems(artifact="node:marathon-worker") == [
        "faults.0.artifact: a zone's drain blames its zone: node:zone/<zone>"
    ]
    named = {"kind": "drain-zone", "spec": {"zone": "zone-b"}}
    assert problems(inject=named, artifact="node:zone/zone-b") == []
    assert problems(inject=named) == ["faults.0.inject.spec.zone: must name the artifact's zone (zone-a)"]
