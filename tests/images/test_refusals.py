from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.apps import REPOSITORY_ROOT
from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.cli import main
from orchestrator.errors import InputError
from orchestrator.images.building import plan_build
from orchestrator.images.changes import changed_text

from .support import AFTER_PASSING, BEFORE, DEPLOYED, SERVICE_FILE, code_fault, python_service

APP = "online-boutique"
ENTRY = "ob-checkout-usd-fast-path"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the project's online-boutique catalog and topology; images.json is written here."""
    root = tmp_path / "project"
    for part in ("fault_catalog", "manifests"):
        shutil.copytree(REPOSITORY_ROOT / part / APP, root / part / APP)
    return root


def _entry() -> CodeFault:
    entry = load_catalog(APP).by_id[ENTRY]
    assert isinstance(entry, CodeFault)
    return entry


def _checkout(tmp_path: Path, text: str) -> Path:
    checkout = tmp_path / "checkout"
    path = checkout / _entry().inject.source.file
    path.parent.mkdir(parents=True)
    path.write_text(text)
    (path.parent / "Dockerfile").write_text("FROM scratch\n")
    return checkout


def _build(project: Path, source: Path, *more: str) -> list[str]:
    return [
        "images",
        "build",
        "--app",
        APP,
        "--ids",
        ENTRY,
        "--source",
        str(source),
        "--root",
        str(project),
        *more,
    ]


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_missing_source_folder_prints_the_pinned_clone_commands_and_refuses_in_one_line(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "microservices-demo"
    assert main(_build(project, missing)) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"git clone https://github.com/GoogleCloudPlatform/microservices-demo {missing}",
        f"git -C {missing} checkout 5b3a712ab85ccb8f6f7cd5b720d36ba9a8d041eb",
    ]
    line = _one_line(err)
    assert str(missing) in line and "--source" in line and "no such directory" in line
    assert not (project / "fault_catalog" / APP / "images.json").exists()


def test_before_not_found_is_refused_naming_the_entry_and_the_file(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = _checkout(tmp_path, "package main\n")
    assert main(_build(project, checkout, "--skip-docker")) == 2
    line = _one_line(capsys.readouterr().err)
    assert ENTRY in line and "src/checkoutservice/main.go" in line and "not found" in line
    assert not (project / "fault_catalog" / APP / "images.json").exists()


def test_before_found_twice_is_refused_with_both_lines(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _entry().inject.source.before
    checkout = _checkout(tmp_path, f"package main\n{before}\n{before}")
    original = (checkout / "src/checkoutservice/main.go").read_bytes()
    assert main(_build(project, checkout, "--skip-docker")) == 2
    line = _one_line(capsys.readouterr().err)
    assert ENTRY in line and "src/checkoutservice/main.go" in line
    second = 2 + before.count("\n") + 1
    assert f"occurs 2 times (lines 2 and {second}); exactly one is needed" in line
    assert (checkout / "src/checkoutservice/main.go").read_bytes() == original


def test_a_missing_file_is_refused(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert main(_build(project, checkout)) == 2
    line = _one_line(capsys.readouterr().err)
    assert ENTRY in line and "inject.source.file" in line and "no such file" in line


def test_an_entry_that_is_not_a_code_fault_is_refused(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = next(entry.id for entry in load_catalog(APP).entries if not isinstance(entry, CodeFault))
    argv = _build(project, tmp_path)
    argv[argv.index(ENTRY)] = other
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert other in line and "only code faults have images" in line


def test_a_real_entry_applies_to_a_checkout_that_has_its_text_and_is_recorded(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = _entry()
    checkout = _checkout(tmp_path, f"package main\n\nfunc total() {{\n{entry.inject.source.before}}}\n")
    assert main(_build(project, checkout, "--skip-docker", "--scratch", str(tmp_path / "scratch"))) == 0
    out = capsys.readouterr().out
    assert "docker: --skip-docker given" in out
    changed = (tmp_path / "scratch" / ENTRY / entry.inject.source.file).read_text()
    assert entry.inject.source.after in changed and entry.inject.source.before not in changed
    images = json.loads((project / "fault_catalog" / APP / "images.json").read_text())["images"]
    record = images[ENTRY]
    assert record["image"] == "checkoutservice:v0.10.6-1"
    assert record["pinned_source"].startswith("GoogleCloudPlatform/microservices-demo@v0.10.6")
    assert [step["status"] for step in record["steps"]] == ["ran", "skipped", "skipped"]


def test_changed_text_refuses_zero_and_two_occurrences_and_hints_at_whitespace() -> None:
    entry = code_fault()
    assert changed_text(entry, text=f"x\n{BEFORE}", path="f.py") == f"x\n{AFTER_PASSING}"
    with pytest.raises(
        InputError, match=r"entry demo-greeter-spacing: f.py: inject.source.before: not found"
    ):
        changed_text(entry, text="nothing here\n", path="f.py")
    with pytest.raises(InputError, match=r"differs only in whitespace"):
        changed_text(entry, text=BEFORE.replace("    ", "\t"), path="f.py")
    with pytest.raises(InputError, match=r"occurs 2 times \(lines 1 and 2\)"):
        changed_text(entry, text=BEFORE * 2, path="f.py")


def test_a_file_without_a_dockerfile_above_it_is_refused(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    python_service(checkout)
    (checkout / "src" / "greeter" / "Dockerfile").unlink()
    with pytest.raises(InputError, match=r"no Dockerfile in src/greeter or any folder above it"):
        plan_build(code_fault(), checkout=checkout, deployed_image=DEPLOYED)
    escaping = code_fault(file="../outside.py")
    with pytest.raises(InputError, match=r"inject.source.file: no such file"):
        plan_build(escaping, checkout=checkout, deployed_image=DEPLOYED)
    assert (checkout / SERVICE_FILE).is_file()
