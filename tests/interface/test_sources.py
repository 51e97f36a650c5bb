from __future__ import annotations

import difflib

import pytest

from orchestrator.catalog.apps import app_names
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.interface.diffs import DiffError, apply_diff
from orchestrator.interface.sources import (
    CHANGELOG,
    SourceError,
    SourceStore,
    registry_configmap,
    registry_name,
)

APP = "online-boutique"
TEXT = "alpha\nbeta\ngamma\ndelta\nepsilon\n"


def _store() -> SourceStore:
    return SourceStore.of(load_topology(APP), load_catalog(APP).entries)


def _fault(service: str) -> CodeFault:
    return next(e for e in load_catalog(APP).entries if isinstance(e, CodeFault) and e.target == service)


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    return "".join(lines)


def test_a_diff_made_by_difflib_applies_and_gives_the_new_text() -> None:
    new = "alpha\nBETA\ngamma\ndelta\nzeta\nepsilon\n"
    assert apply_diff(TEXT, _diff(TEXT, new, "f.txt"), path="f.txt") == new


def test_a_hunk_with_a_wrong_line_number_still_applies_where_its_context_matches() -> None:
    diff = "--- a/f.txt\n+++ b/f.txt\n@@ -40,3 +40,3 @@\n gamma\n-delta\n+DELTA\n epsilon\n"
    assert apply_diff(TEXT, diff, path="f.txt") == "alpha\nbeta\ngamma\nDELTA\nepsilon\n"


def test_a_hunk_whose_context_is_not_in_the_file_is_rejected_with_its_first_line() -> None:
    diff = "@@ -1,2 +1,2 @@\n alpha\n-omega\n+OMEGA\n"
    with pytest.raises(DiffError, match=r"hunk 1 .* starting 'alpha'"):
        apply_diff(TEXT, diff, path="f.txt")


def test_a_diff_for_another_file_is_rejected() -> None:
    diff = "--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n"
    with pytest.raises(DiffError, match="not 'f.txt'"):
        apply_diff(TEXT, diff, path="f.txt")


def test_text_without_hunks_is_not_a_diff() -> None:
    with pytest.raises(DiffError, match="expected a hunk header"):
        apply_diff(TEXT, "please change beta to BETA", path="f.txt")
    with pytest.raises(DiffError, match="no hunks"):
        apply_diff(TEXT, "--- a/f.txt\n+++ b/f.txt\n", path="f.txt")


def test_the_base_snapshot_holds_every_before_snippet_and_no_after_snippet() -> None:
    store = _store()
    fault = _fault("cartservice")
    site = store.site(fault)
    files = store.base_files("cartservice")
    assert site.path == fault.inject.source.file
    assert site.text in files[site.path]
    assert site.spelled(fault.inject.source.after) not in files[site.path]
    assert store.base_files("cartservice") == files  # deterministic


def test_a_fault_build_shows_the_after_snippet_and_its_release_note() -> None:
    store = _store()
    fault = _fault("cartservice")
    site = store.site(fault)
    snapshot = store.snapshot("cartservice", f"registry.example/cartservice:{fault.inject.image_tag}")
    assert site.spelled(fault.inject.source.after) in snapshot.files[site.path]
    assert site.text not in snapshot.files[site.path]
    assert fault.inject.release_note in snapshot.files[CHANGELOG]
    assert snapshot.fault == fault


def test_an_image_nobody_published_has_no_source() -> None:
    with pytest.raises(SourceError, match="no source is published"):
        _store().snapshot("cartservice", "cartservice:v9.9.9")


def test_a_patch_restoring_the_before_snippet_builds_an_image_that_behaves_as_the_base() -> None:
    store = _store()
    fault = _fault("cartservice")
    image = f"registry.example/cartservice:{fault.inject.image_tag}"
    site = store.site(fault)
    path = site.path
    deployed = store.snapshot("cartservice", image).files[path]
    repaired = deployed.replace(site.spelled(fault.inject.source.after), site.text)
    patch = store.propose(service="cartservice", image=image, path=path, diff=_diff(deployed, repaired, path))
    build = store.build(service="cartservice", patch_id=patch.patch_id, image=image)
    assert build.fixes
    assert build.tag == f"{fault.inject.image_tag}-p1"
    assert build.image == f"registry.example/cartservice:{fault.inject.image_tag}-p1"
    assert build.behaves_as == store.base_tag("cartservice")
    configmap = registry_configmap(build)
    assert configmap["metadata"]["namespace"] == "marathon-registry"
    assert configmap["metadata"]["name"] == registry_name("cartservice", build.tag)
    assert configmap["data"]["behaves-as"] == "v0.10.6"
    assert store.snapshot("cartservice", build.image).files[path] == repaired


def test_a_patch_that_leaves_the_defect_behaves_as_the_fault_build() -> None:
    store = _store()
    fault = _fault("cartservice")
    image = f"cartservice:{fault.inject.image_tag}"
    path = store.site(fault).path
    deployed = store.snapshot("cartservice", image).files[path]
    cosmetic = deployed + "// reviewed\n"
    patch = store.propose(service="cartservice", image=image, path=path, diff=_diff(deployed, cosmetic, path))
    build = store.build(service="cartservice", patch_id=patch.patch_id, image=image)
    assert not build.fixes
    assert build.behaves_as == fault.inject.image_tag


def test_a_build_needs_a_patch_of_the_same_service() -> None:
    with pytest.raises(SourceError, match="no patch"):
        _store().build(service="cartservice", patch_id="frontend-patch-1", image="cartservice:v0.10.6")


@pytest.mark.parametrize("app", app_names())
def test_every_code_fault_of_every_app_has_a_base_and_a_fault_snapshot(app: str) -> None:
    catalog = load_catalog(app)
    store = SourceStore.of(load_topology(app), catalog.entries)
    faults = [e for e in catalog.entries if isinstance(e, CodeFault)]
    assert faults
    for fault in faults:
        site = store.site(fault)
        assert site.text in store.base_files(fault.target)[site.path], fault.id
        snapshot = store.snapshot(fault.target, f"registry.example/x:{fault.inject.image_tag}")
        assert site.spelled(fault.inject.source.after) in snapshot.files[site.path], fault.id
        assert snapshot.fault is not None and snapshot.fault.id == fault.id


def test_a_fault_site_lives_at_its_catalog_path_or_in_the_module_of_the_same_file_name() -> None:
    for app in app_names():
        catalog = load_catalog(app)
        store = SourceStore.of(load_topology(app), catalog.entries)
        for fault in (e for e in catalog.entries if isinstance(e, CodeFault)):
            path = store.site(fault).path
            assert path == fault.inject.source.file or (
                path.rsplit("/", 1)[1] == fault.inject.source.file.rsplit("/", 1)[1]
                and path.startswith(fault.inject.source.file.split("/src/")[0])
            ), fault.id


def test_a_repair_that_reindents_the_original_code_still_repairs() -> None:
    store = _store()
    fault = _fault("checkoutservice")
    image = f"checkoutservice:{fault.inject.image_tag}"
    site = store.site(fault)
    deployed = store.snapshot("checkoutservice", image).files[site.path]
    flush_left = deployed.replace(site.spelled(fault.inject.source.after), fault.inject.source.before)
    assert flush_left != deployed
    diff = _diff(deployed, flush_left, site.path)
    patch = store.propose(service="checkoutservice", image=image, path=site.path, diff=diff)
    assert store.build(service="checkoutservice", patch_id=patch.patch_id, image=image).fixes
