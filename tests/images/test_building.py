from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.images.building import (
    PlannedBuild,
    Publish,
    build_image,
    docker_unavailable,
    plan_build,
)
from orchestrator.images.records import ImageRecord, write_records
from orchestrator.images.running import Outcome, ToolFinder, find_tool
from orchestrator.images.upstreams import Scope, Upstream

from .support import (
    AFTER_FAILING,
    AFTER_PASSING,
    BEFORE,
    DEPLOYED,
    NO_ENGINE,
    SERVICE_FILE,
    UPSTREAM,
    Recorder,
    code_fault,
    every_tool,
    python_service,
)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()
    }


def _run_for_real(tmp_path: Path, after: str) -> tuple[ImageRecord, Path, list[str], dict[str, bytes], Path]:
    """The pipeline on a real Python service with its real tests; the Docker engine does not answer."""
    checkout = tmp_path / "checkout"
    python_service(checkout)
    original = _tree(checkout)
    # docker is installed but its engine does not answer; every other program runs for real.
    runner = Recorder(
        answers={("docker", "info"): Outcome(1, "", NO_ENGINE)},
        real=lambda argv: Path(argv[0]).name != "docker",
    )

    def which(name: str) -> str | None:
        return "/usr/bin/docker" if name == "docker" else find_tool(name)

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    planned = plan_build(code_fault(after=after), checkout=checkout, deployed_image=DEPLOYED)
    no_docker = docker_unavailable(skip_docker=False, runner=runner, which=which, cwd=scratch)
    lines: list[str] = []
    record = build_image(
        planned,
        upstream=UPSTREAM,
        checkout=checkout,
        scratch=scratch,
        publish=Publish(kind_cluster="marathon"),
        no_docker=no_docker,
        runner=runner,
        which=which,
        report=lines.append,
    )
    assert _tree(checkout) == original, "the user's checkout must never change"
    return record, scratch / planned.entry.id, lines, original, checkout


def test_the_change_is_applied_in_a_scratch_copy_of_the_service_and_its_own_tests_run(tmp_path: Path) -> None:
    record, copy, lines, original, _ = _run_for_real(tmp_path, AFTER_PASSING)
    assert (copy / SERVICE_FILE).read_text().endswith(AFTER_PASSING)
    assert original[SERVICE_FILE].decode().endswith(BEFORE)
    assert (copy / "src" / "greeter" / "test_greeter.py").is_file()
    assert not (copy / "src" / "other").exists(), "only the service's folder is copied"
    steps = {step.name: (step.status, step.detail) for step in record.steps}
    assert steps["change"][0] == "ran"
    assert steps["pytest"] == ("ran", "passed in src/greeter")
    assert steps["build"][0] == "skipped"
    assert (
        "no Docker engine answers" in steps["build"][1]
        and "Is the docker daemon running?" in steps["build"][1]
    )
    assert steps["publish"] == ("skipped", "no image was built")
    assert record.digest is None and record.published is None and not record.failed
    assert record.source_sha256_before == hashlib.sha256(original[SERVICE_FILE]).hexdigest()
    assert record.source_sha256_after == hashlib.sha256((copy / SERVICE_FILE).read_bytes()).hexdigest()
    assert any("build: skipped" in line and "no Docker engine answers" in line for line in lines)


def test_a_failing_service_test_stops_the_build_and_is_recorded(tmp_path: Path) -> None:
    record, copy, _, _, _ = _run_for_real(tmp_path, AFTER_FAILING)
    steps = {step.name: step for step in record.steps}
    assert steps["pytest"].status == "failed"
    assert "failed" in steps["pytest"].detail
    assert steps["build"].status == "skipped" and "checks failed" in steps["build"].detail
    assert record.failed
    assert (copy / SERVICE_FILE).read_text().endswith(AFTER_FAILING)


def test_images_json_records_the_entry_deterministically_beside_other_entries(tmp_path: Path) -> None:
    record, _, _, _, _ = _run_for_real(tmp_path, AFTER_PASSING)
    root = tmp_path / "project"
    path = root / "fault_catalog" / "demo" / "images.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"app": "demo", "images": {"demo-older": {"entry_id": "demo-older"}}}))
    assert write_records("demo", [record], root=root) == path
    first = path.read_bytes()
    document = json.loads(first)
    assert first.decode() == json.dumps(document, sort_keys=True, indent=2) + "\n"
    assert set(document["images"]) == {"demo-older", "demo-greeter-spacing"}
    written = document["images"]["demo-greeter-spacing"]
    assert written["entry_id"] == "demo-greeter-spacing"
    assert written["entry_hash"] == code_fault().content_hash()
    assert written["image"] == "greeter:v1-1" and written["image_tag"] == "v1-1"
    assert written["digest"] is None
    assert written["source_sha256_before"] != written["source_sha256_after"]
    assert [step["name"] for step in written["steps"]] == ["change", "pytest", "build", "publish"]
    assert written["steps"][1]["command"] == "python -m pytest -q -p no:cacheprovider"
    write_records("demo", [record], root=root)
    assert path.read_bytes() == first


def _planned(tmp_path: Path, prepare: Callable[[Path], object]) -> tuple[PlannedBuild, Path]:
    checkout = tmp_path / "checkout"
    prepare(python_service(checkout))
    return plan_build(code_fault(), checkout=checkout, deployed_image=DEPLOYED), checkout


def _build(
    tmp_path: Path,
    runner: Recorder,
    *,
    publish: Publish,
    upstream: Upstream = UPSTREAM,
    which: ToolFinder = every_tool,
    prepare: Callable[[Path], object] = lambda service: None,
) -> tuple[ImageRecord, Path]:
    planned, checkout = _planned(tmp_path, prepare)
    scratch = tmp_path / "scratch"
    no_docker = docker_unavailable(skip_docker=False, runner=runner, which=which, cwd=scratch)
    record = build_image(
        planned,
        upstream=upstream,
        checkout=checkout,
        scratch=scratch,
        publish=publish,
        no_docker=no_docker,
        runner=runner,
        which=which,
    )
    return record, scratch / planned.entry.id


def test_with_an_engine_the_image_is_built_tagged_for_the_release_and_loaded_into_kind(
    tmp_path: Path,
) -> None:
    runner = Recorder(answers={("docker", "image"): Outcome(0, "sha256:abc\n", "")})
    record, copy = _build(tmp_path, runner, publish=Publish(kind_cluster="marathon"))
    assert runner.commands() == [
        ("docker", "info", "--format", "{{.ServerVersion}}"),
        (Path(sys.executable).name, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        (
            "docker",
            "build",
            "-t",
            "greeter:v1-1",
            "-t",
            "registry.example/demo/greeter:v1-1",
            "-f",
            "Dockerfile",
            ".",
        ),
        ("docker", "image", "inspect", "--format", "{{.Id}}", "greeter:v1-1"),
        ("kind", "load", "docker-image", "registry.example/demo/greeter:v1-1", "--name", "marathon"),
    ]
    assert runner.calls[2][1] == copy / "src" / "greeter"
    assert record.digest == "sha256:abc"
    assert record.published == "kind:marathon/registry.example/demo/greeter:v1-1"
    assert [step.status for step in record.steps] == ["ran", "ran", "ran", "ran"]


def test_with_a_registry_the_image_is_tagged_and_pushed(tmp_path: Path) -> None:
    answers = {("docker", "image"): Outcome(0, "localhost:5001/greeter@sha256:def\n", "")}
    runner = Recorder(answers=answers)
    record, _ = _build(tmp_path, runner, publish=Publish(registry="localhost:5001/"))
    assert runner.commands()[-4:] == [
        ("docker", "image", "inspect", "--format", "{{.Id}}", "greeter:v1-1"),
        ("docker", "tag", "greeter:v1-1", "localhost:5001/greeter:v1-1"),
        ("docker", "push", "localhost:5001/greeter:v1-1"),
        ("docker", "image", "inspect", "--format", "{{index .RepoDigests 0}}", "localhost:5001/greeter:v1-1"),
    ]
    assert record.published == "localhost:5001/greeter@sha256:def"


def test_an_app_built_from_the_checkout_copies_it_and_builds_with_the_repository_as_context(
    tmp_path: Path,
) -> None:
    upstream = Upstream(
        repository="example/demo",
        version="v1",
        commit="0" * 40,
        copy=Scope.CHECKOUT,
        context=Scope.CHECKOUT,
        prebuild=("make", "jar", "{service_dir}"),
    )
    runner = Recorder()
    _, copy = _build(tmp_path, runner, publish=Publish(), upstream=upstream)
    assert (copy / "src" / "other" / "Dockerfile").is_file()
    build = next(call for call in runner.calls if call[0][:2] == ("docker", "build"))
    assert build[0][-3:] == ("-f", "src/greeter/Dockerfile", ".") and build[1] == copy
    assert ("make", "jar", "src/greeter") in runner.commands()


def test_a_missing_tool_is_a_recorded_skip_and_the_build_goes_on(tmp_path: Path) -> None:
    runner = Recorder()

    def which(name: str) -> str | None:
        return None if name == sys.executable else every_tool(name)

    record, _ = _build(tmp_path, runner, publish=Publish(), which=which)
    steps = {step.name: step for step in record.steps}
    assert steps["pytest"].status == "skipped"
    assert steps["pytest"].detail == f"{Path(sys.executable).name} is not installed"
    assert steps["build"].status == "ran"
    assert steps["publish"].detail == "neither --registry nor --kind-cluster given"
    assert not any(call[0][1:3] == ("-m", "pytest") for call in runner.calls)


def test_a_go_service_is_vetted_and_tested_when_go_is_installed(tmp_path: Path) -> None:
    runner = Recorder()
    go_module = lambda service: (service / "go.mod").write_text("module greeter\n")  # noqa: E731
    record, _ = _build(tmp_path, runner, publish=Publish(), prepare=go_module)
    assert [c for c in runner.commands() if c[0] == "go"] == [("go", "vet", "./..."), ("go", "test", "./...")]
    assert [step.name for step in record.steps][:3] == ["change", "go vet", "go test"]


@pytest.mark.parametrize(
    ("skip", "tools", "answer", "reason"),
    [
        (True, every_tool, Outcome(0, "27.0", ""), "--skip-docker given"),
        (False, lambda name: None, Outcome(0, "27.0", ""), "no docker program on PATH"),
        (
            False,
            every_tool,
            Outcome(1, "", NO_ENGINE),
            f"no Docker engine answers (docker info: {NO_ENGINE})",
        ),
        (False, every_tool, Outcome(0, "27.0", ""), None),
    ],
)
def test_docker_is_used_only_when_an_engine_answers(tmp_path: Path, skip, tools, answer, reason) -> None:
    runner = Recorder(answers={("docker", "info"): answer})
    assert docker_unavailable(skip_docker=skip, runner=runner, which=tools, cwd=tmp_path) == reason
