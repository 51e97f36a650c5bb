"""The cluster scripts parse, pass shellcheck, and stop at once with one clear line when a tool is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "deploy").rglob("*.sh"))


def test_there_are_the_cluster_scripts() -> None:
    names = {str(path.relative_to(ROOT / "deploy")) for path in SCRIPTS}
    assert {
        "kind/up.sh",
        "kind/down.sh",
        "kind/netem.sh",
        "install.sh",
        "ready.sh",
        "kubeadm/control-plane.sh",
    } <= names
    assert all(os.access(path, os.X_OK) for path in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_script_parses(script: Path) -> None:
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def test_bash_n_rejects_a_broken_script(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sh"
    broken.write_text((ROOT / "deploy/kind/up.sh").read_text().replace("fi\n", "", 1))
    assert subprocess.run(["bash", "-n", str(broken)], capture_output=True, timeout=30).returncode != 0


def shellcheck() -> str:
    path = shutil.which("shellcheck")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is missing (.ci/run installs Debian's shellcheck)")
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    return path


def test_every_script_passes_shellcheck() -> None:
    result = subprocess.run(
        [shellcheck(), "-x", *map(str, SCRIPTS)],
        capture_output=True,
        text=True,
        cwd=ROOT / "deploy",
        timeout=120,
    )
    assert result.returncode == 0, result.stdout


def test_shellcheck_flags_an_unquoted_expansion(tmp_path: Path) -> None:
    script = tmp_path / "bad.sh"
    script.write_text("#!/usr/bin/env bash\nfile=$1\nrm $file\n")
    assert subprocess.run([shellcheck(), str(script)], capture_output=True, timeout=60).returncode != 0


def bare_path(tmp_path: Path, *, docker_info_works: bool) -> str:
    """A PATH with the few programs the scripts need before their tool check, a docker client whose
    engine does (or does not) answer, and no kind and no kubectl."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "basename", "cat"):
        located = shutil.which(tool)
        assert located
        (bin_dir / tool).symlink_to(located)
    docker = bin_dir / "docker"
    docker.write_text(f"#!/bin/sh\nexit {0 if docker_info_works else 1}\n")
    docker.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("script", ["deploy/kind/up.sh", "deploy/kind/down.sh"])
def test_kind_scripts_stop_at_once_naming_what_is_missing(tmp_path: Path, script: str) -> None:
    env = {"PATH": bare_path(tmp_path, docker_info_works=False), "HOME": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(ROOT / script)], capture_output=True, text=True, env=env, timeout=30
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "missing docker (docker info fails" in lines[0] and "kind" in lines[0]
    assert result.stdout == ""


def test_up_names_only_kind_and_kubectl_when_the_docker_engine_answers(tmp_path: Path) -> None:
    env = {"PATH": bare_path(tmp_path, docker_info_works=True), "HOME": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(ROOT / "deploy/kind/up.sh")], capture_output=True, text=True, env=env, timeout=30
    )
    assert result.returncode == 2
    assert "missing kind, kubectl;" in result.stderr and "docker" not in result.stderr.split(";")[0]


def test_up_on_this_machine_without_kind_stops_before_doing_anything() -> None:
    if shutil.which("kind"):
        pytest.skip("kind is installed here")
    result = subprocess.run(
        ["bash", str(ROOT / "deploy/kind/up.sh")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.startswith("up.sh: missing ") and "kind" in result.stderr
    assert "creating" not in result.stderr
