"""The generated source of every service: a whole codebase in which the fault sites do not stand out."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import PurePosixPath

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.catalog.topology import Call, ServiceKind, Topology
from orchestrator.interface.codebase import Code, Conventions, codebase
from orchestrator.interface.sources import SourceStore

APPS = app_names()
INFRASTRUCTURE = (ServiceKind.DATASTORE, ServiceKind.QUEUE)


@cache
def _topology(app: str) -> Topology:
    return load_topology(app)


@cache
def _entries(app: str) -> tuple[object, ...]:
    return tuple(load_catalog(app).entries)


def _faults(app: str) -> list[CodeFault]:
    return [e for e in _entries(app) if isinstance(e, CodeFault)]


def _store(app: str) -> SourceStore:
    return SourceStore.of(_topology(app), _entries(app))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _calls(topology: Topology, service: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """What the topology says ``service`` serves (operation -> nothing) and calls (callee -> operations)."""
    served: dict[str, list[str]] = {}
    calls: dict[str, list[str]] = {}

    def walk(caller: str, tree: tuple[Call, ...]) -> None:
        for call in tree:
            if call.to == service:
                served.setdefault(call.op, [])
            if caller == service:
                calls.setdefault(call.to, []).append(call.op)
            walk(call.to, call.calls)

    for route in topology.routes:
        if topology.entry_point == service:
            served.setdefault(route.name, [])
        walk(topology.entry_point, route.calls)
    for flow in topology.background:
        walk(flow.service, flow.calls)
    return served, calls


def _rank(lines: dict[str, int], path: str) -> int:
    """Where ``path`` comes when a service's files are listed largest first."""
    return sorted(lines, key=lambda p: (-lines[p], p)).index(path)


def _identifier(op: str) -> str:
    """The part of an operation its code must spell: a gRPC method, a path's last word, a table, a command."""
    if "/" in op and not op.split()[0].isupper():
        return op.rsplit("/", 1)[1]
    last = [part for part in op.split()[-1].split("/") if part and not part.startswith("{")]
    return (last[-1] if last else op.split()[0]).rsplit(".", 1)[-1]


@pytest.mark.parametrize("app", APPS)
def test_every_application_service_has_a_module_per_endpoint_per_dependency_and_its_configuration(
    app: str,
) -> None:
    topology, store = _topology(app), _store(app)
    for service in topology.services:
        if service.kind in INFRASTRUCTURE:
            continue
        tree = store.tree(service.name)
        by_role: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for path, (role, subjects) in tree.roles.items():
            by_role.setdefault(role, []).append((path, subjects))
        assert len(by_role.get("main", [])) == 1, service.name
        configs = [tree.files[path] for path, _ in by_role["config"]]
        for env in (*service.env, *service.address_env, *service.credential_env, *service.field_env):
            assert any(env in text for text in configs), (service.name, env)
        served, calls = _calls(topology, service.name)
        endpoints = {s: p for p, subjects in by_role.get("endpoint", []) for s in subjects}
        for op in served:
            assert op in endpoints, (service.name, op)
            assert _norm(_identifier(op)) in _norm(tree.files[endpoints[op]]), (service.name, op)
        clients = {
            s: p for role in ("client", "store") for p, subjects in by_role.get(role, []) for s in subjects
        }
        for callee, ops in calls.items():
            assert callee in clients, (service.name, callee)
            text = tree.files[clients[callee]]
            if service.language.split()[0] in ("nginx", "Envoy"):
                assert callee in text
            else:
                assert all(_norm(_identifier(op)) in _norm(text) for op in ops), (service.name, callee, ops)
        jobs = sorted(s for _, subjects in by_role.get("job", []) for s in subjects)
        assert jobs == sorted(f.name for f in topology.background if f.service == service.name), service.name
        assert "image" in by_role, service.name


@pytest.mark.parametrize("app", APPS)
def test_a_datastore_has_its_server_configuration_and_a_schema_for_every_table_its_callers_use(
    app: str,
) -> None:
    topology, store = _topology(app), _store(app)
    for service in topology.services:
        if service.kind not in INFRASTRUCTURE:
            continue
        tree = store.tree(service.name)
        configs = [p for p, (role, _) in tree.roles.items() if role == "config"]
        assert len(configs) == 1 and "Dockerfile" in {PurePosixPath(p).name for p in tree.files}, service.name
        served, _ = _calls(topology, service.name)
        if service.datastore_kind in ("mysql", "postgresql"):
            tables = {op.split()[1] for op in served}
            schemas = "".join(text for path, text in tree.files.items() if path.endswith(".sql"))
            assert all(f"CREATE TABLE IF NOT EXISTS {t} (" in schemas for t in tables), service.name


@pytest.mark.parametrize("app", APPS)
def test_a_services_file_names_and_count_are_the_same_whether_or_not_the_catalog_has_a_code_fault_for_it(
    app: str,
) -> None:
    topology, store = _topology(app), _store(app)
    for target in sorted({f.target for f in _faults(app)}):
        others = [e for e in _entries(app) if not (isinstance(e, CodeFault) and e.target == target)]
        without = SourceStore.of(topology, others).tree(target)
        assert list(store.tree(target).files) == list(without.files), target
        assert store.tree(target).roles == without.roles, target


@pytest.mark.parametrize("app", APPS)
def test_the_fault_site_file_keeps_its_size_rank_within_its_service_and_grows_only_by_the_placed_code(
    app: str,
) -> None:
    topology, store = _topology(app), _store(app)
    for fault in _faults(app):
        others = [e for e in _entries(app) if not (isinstance(e, CodeFault) and e.target == fault.target)]
        with_code = {p: t.count("\n") for p, t in store.tree(fault.target).files.items()}
        without = {
            p: t.count("\n") for p, t in SourceStore.of(topology, others).tree(fault.target).files.items()
        }
        path = store.site(fault).path
        grown = with_code[path] - without[path]
        # The code itself, a blank line around a whole declaration, and the lines closing what it leaves open.
        assert 0 <= grown <= fault.inject.source.before.count("\n") + 7, (fault.id, grown)
        assert abs(_rank(with_code, path) - _rank(without, path)) <= 2, fault.id


@pytest.mark.parametrize("app", APPS)
def test_the_original_code_sits_among_generated_code_inside_its_module(app: str) -> None:
    store = _store(app)
    for fault in _faults(app):
        site = store.site(fault)
        text = store.tree(fault.target).files[site.path]
        before, _, after = text.partition(site.text)
        assert before.strip() and after.strip(), fault.id
        assert len(before.splitlines()) + len(after.splitlines()) >= len(site.text.splitlines()), fault.id
        assert site.prefix or site.text.split("\n", 1)[0].startswith(("func ", "def ")), fault.id


def test_a_statement_stays_in_its_module_when_other_code_there_replaces_its_function() -> None:
    topology, path = _topology("astronomy-shop"), "src/product-catalog/main.go"
    signature = "func (p *productCatalog) GetProduct(ctx context.Context, req *pb.GetProductRequest)"
    declaration = Code(
        "declaration",
        "product-catalog",
        path,
        f"{signature} (*pb.Product, error) {{\n    return p.readProduct(ctx, req.Id)\n}}\n",
    )
    statement = Code(
        "statement",
        "product-catalog",
        path,
        'port := os.Getenv("PORT")\nif port == "" {\n    port = defaultPort\n}',
    )
    conventions = Conventions.infer([declaration, statement])
    alone = codebase(topology, "product-catalog", conventions, [statement])
    assert "GetProduct(" in alone.files[path].split(alone.sites["statement"].text)[0].rsplit("func ", 1)[1]
    trees = [
        codebase(topology, "product-catalog", conventions, codes)
        for codes in ([statement, declaration], [declaration, statement])
    ]
    for tree in trees:
        assert tree.sites["declaration"].text in tree.files[path]
        assert tree.sites["statement"].text in tree.files[path]
    assert trees[0].files == trees[1].files


def test_nothing_in_any_generated_tree_names_a_fault_or_the_benchmark() -> None:
    telling = re.compile(r"\b(faults?|defects?|inject\w*|bugs?|marathon|snippets?|chaos|benchmark)\b", re.I)
    for app in APPS:
        store = _store(app)
        ids = [f.id for f in _faults(app)]
        for service in _topology(app).services:
            for path, text in store.tree(service.name).files.items():
                assert not telling.search(path + text), (path, telling.search(path + text))
                assert not any(fid in text for fid in ids), path


@pytest.mark.parametrize("app", APPS)
def test_a_repair_restoring_the_original_code_builds_an_image_that_behaves_as_the_base(app: str) -> None:
    store = _store(app)
    for fault in _faults(app):
        site = store.site(fault)
        image = f"registry.example/{fault.target}:{fault.inject.image_tag}"
        deployed = store.snapshot(fault.target, image).files[site.path]
        assert site.spelled(fault.inject.source.after) in deployed, fault.id
        repaired = deployed.replace(site.spelled(fault.inject.source.after), site.text)
        diff = "".join(
            difflib.unified_diff(
                deployed.splitlines(keepends=True), repaired.splitlines(keepends=True), site.path, site.path
            )
        )
        patch = store.propose(service=fault.target, image=image, path=site.path, diff=diff)
        build = store.build(service=fault.target, patch_id=patch.patch_id, image=image)
        assert build.fixes and build.behaves_as == store.base_tag(fault.target), fault.id
        assert (
            store.snapshot(fault.target, build.image).files[site.path]
            == store.base_files(fault.target)[site.path]
        )


@pytest.mark.parametrize("app", APPS)
def test_a_fault_build_differs_from_the_base_only_in_the_changed_code_and_the_changelog(app: str) -> None:
    store = _store(app)
    for fault in _faults(app):
        base = store.base_files(fault.target)
        build = store.snapshot(fault.target, f"x/{fault.target}:{fault.inject.image_tag}").files
        assert set(base) == set(build)
        changed = sorted(p for p in base if base[p] != build[p])
        assert changed == sorted({store.site(fault).path, "CHANGELOG.md"}), fault.id
        path = store.site(fault).path
        removed = [
            line[1:]
            for line in difflib.unified_diff(base[path].splitlines(), build[path].splitlines(), n=0)
            if line.startswith("-") and not line.startswith("---")
        ]
        assert {r.strip() for r in removed} <= {b.strip() for b in fault.inject.source.before.splitlines()}


_DIGEST = """
import hashlib, json
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.interface.sources import SourceStore
digest = hashlib.sha256()
for app in {apps!r}:
    topology = load_topology(app)
    store = SourceStore.of(topology, load_catalog(app).entries)
    for service in topology.service_names:
        digest.update(json.dumps(store.base_files(service), sort_keys=False).encode())
print(digest.hexdigest())
"""


def test_generation_gives_the_same_bytes_in_fresh_processes_with_different_hash_seeds() -> None:
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", _DIGEST.format(apps=APPS)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(result.stdout.strip())
    here = hashlib.sha256()
    for app in APPS:
        store = _store(app)
        for service in _topology(app).service_names:
            here.update(json.dumps(store.base_files(service), sort_keys=False).encode())
    assert digests == {here.hexdigest()}
