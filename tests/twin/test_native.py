"""The twin's compiled modules: removed when a source changes after they were built, and the same results
as the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import orchestrator.twin.model.traffic as traffic
from orchestrator.twin.native import GROUP, MANIFEST, built_path, drop_stale, read_manifest

SUFFIX = EXTENSION_SUFFIXES[0]
REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path, *, sources: list[str], built: list[str]) -> Path:
    """Sources and "built" files (their content does not matter here) under ``root``, and their manifest,
    written last as the build writes it."""
    for path in [*sources, *built]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    manifest = root / "orchestrator" / "twin" / "native.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"sources": sources, "built": built}))
    past = manifest.stat().st_mtime_ns - 10**9
    for path in [*sources, *built]:
        os.utime(root / path, ns=(past, past))
    return manifest


SOURCES = ["orchestrator/twin/model/traffic.py", "orchestrator/twin/store.py"]
BUILT = [f"orchestrator/twin/model/traffic{SUFFIX}", f"orchestrator/twin/store{SUFFIX}",
         f"orchestrator/twin/_native__mypyc{SUFFIX}"]  # fmt: skip


def test_current_compiled_modules_are_kept(tmp_path: Path) -> None:
    manifest = _tree(tmp_path, sources=SOURCES, built=BUILT)
    assert drop_stale(tmp_path, manifest) is None
    assert all((tmp_path / path).exists() for path in BUILT) and manifest.exists()


def test_a_source_changed_after_the_build_removes_every_built_file(tmp_path: Path) -> None:
    manifest = _tree(tmp_path, sources=SOURCES, built=BUILT)
    later = manifest.stat().st_mtime_ns + 10**9
    os.utime(tmp_path / SOURCES[1], ns=(later, later))
    said = drop_stale(tmp_path, manifest)
    assert said is not None and "orchestrator/twin/store.py changed" in said and "runs from source" in said
    assert not any((tmp_path / path).exists() for path in BUILT) and not manifest.exists()
    assert all((tmp_path / path).exists() for path in SOURCES)
    assert drop_stale(tmp_path, manifest) is None  # once


def test_a_missing_built_file_removes_the_others(tmp_path: Path) -> None:
    manifest = _tree(tmp_path, sources=SOURCES, built=BUILT)
    (tmp_path / BUILT[2]).unlink()
    said = drop_stale(tmp_path, manifest)
    assert said is not None and f"_native__mypyc{SUFFIX} is missing" in said
    assert not any((tmp_path / path).exists() for path in BUILT)


def test_an_unreadable_manifest_removes_every_extension_module_of_the_package(tmp_path: Path) -> None:
    manifest = _tree(tmp_path, sources=SOURCES, built=BUILT)
    manifest.write_text('{"sources": "not a list"}')
    said = drop_stale(tmp_path, manifest)
    assert said is not None and "native.json is unreadable" in said
    assert not any((tmp_path / path).exists() for path in BUILT) and not manifest.exists()


def test_a_failed_build_lists_nothing_and_nothing_is_removed(tmp_path: Path) -> None:
    manifest = _tree(tmp_path, sources=[], built=[])
    assert drop_stale(tmp_path, manifest) is None and manifest.exists()
    assert drop_stale(tmp_path, tmp_path / "absent.json") is None


def test_built_paths_are_beside_their_sources() -> None:
    assert built_path("orchestrator.twin.model.traffic") == f"orchestrator/twin/model/traffic{SUFFIX}"
    assert built_path(GROUP + "__mypyc") == f"orchestrator/twin/_native__mypyc{SUFFIX}"


def _compiled() -> bool:
    listed = read_manifest(MANIFEST)
    return bool(listed and listed["built"]) and str(traffic.__file__).endswith(SUFFIX)


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI compiles the twin; elsewhere it may not")
def test_ci_runs_the_compiled_twin() -> None:
    assert _compiled(), f"the twin runs from source in CI ({traffic.__file__}): see build/native/build.log"


STEPPED = """
import hashlib, sys
from pathlib import Path
from orchestrator.twin.boot import Twin
import orchestrator.twin.model.traffic as traffic
twin = Twin(sys.argv[1], seed=int(sys.argv[2]), root=Path(sys.argv[3]))  # the repository's manifests
digest = hashlib.sha256()
for _ in range(12):
    twin.advance(150)
    digest.update(repr(twin.series()).encode())
    # Every stored object, ints told from floats; the cluster's identity is fresh from the OS in each twin.
    digest.update(repr(twin.cluster.store._objects).replace(twin.cluster.identity, "identity").encode())
print(traffic.__file__.rsplit(".", 1)[-1], twin.requests, twin.telemetry.digest, digest.hexdigest())
"""


@pytest.mark.slow
@pytest.mark.skipif(not _compiled(), reason="the twin is not compiled here")
@pytest.mark.parametrize(("app", "seed"), [("train-ticket", 11), ("astronomy-shop", 3)])
def test_the_compiled_twin_steps_as_its_sources_do(tmp_path: Path, app: str, seed: int) -> None:
    shutil.copytree(REPO / "orchestrator", tmp_path / "orchestrator", ignore=shutil.ignore_patterns("*.so"))
    (tmp_path / "orchestrator" / "twin" / "native.json").unlink(missing_ok=True)
    answers = []
    for root in (REPO, tmp_path):
        env = {**os.environ, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, "-c", STEPPED, app, str(seed), str(REPO)], cwd=root, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        answers.append(done.stdout.split())
    (compiled_as, *compiled), (source_as, *source) = answers
    assert (compiled_as, source_as) == ("so", "py")
    assert compiled == source
