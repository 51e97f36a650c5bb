"""The image's build context, checked offline: the Dockerfile's sources are in it, nothing private is, and
the package installs from what is in it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy/docker/Dockerfile"


def dockerignore_patterns(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    """(negated, regex) per line, with Docker's meaning: ``**`` any number of folders, ``*`` and ``?``
    within one name, and a pattern that matches a folder matching everything under it."""
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line.removeprefix("!").strip("/")
        regex = ""
        i = 0
        while i < len(line):
            if line.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif line.startswith("**", i):
                regex += ".*"
                i += 2
            elif line[i] == "*":
                regex += "[^/]*"
                i += 1
            elif line[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(line[i])
                i += 1
        patterns.append((negated, re.compile(f"{regex}(?:/.*)?")))
    return patterns


def in_context(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """The last pattern that matches decides, as in Docker."""
    included = True
    for negated, pattern in patterns:
        if pattern.fullmatch(path):
            included = negated
    return included


def patterns() -> list[tuple[bool, re.Pattern[str]]]:
    return dockerignore_patterns((ROOT / ".dockerignore").read_text())


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    return [line for line in listed.stdout.splitlines() if (ROOT / line).is_file()]


def copy_sources() -> list[str]:
    sources = []
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            words = [w for w in line.split()[1:] if not w.startswith("--")]
            sources += words[:-1]
    return [s.removeprefix("./").rstrip("/") for s in sources]


def test_the_dockerfile_is_the_slim_python_image_with_prometheus_bubblewrap_and_the_marathon_entrypoint() -> (
    None
):
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, flags=re.M)
    assert re.search(r"apt-get install .*\bprometheus\b.*\bbubblewrap\b", text)
    assert 'ENTRYPOINT ["marathon"]' in text


def test_every_copy_source_exists_and_is_in_the_context() -> None:
    context = patterns()
    sources = copy_sources()
    assert {"pyproject.toml", "orchestrator", "alert_rules", "manifests", "fault_catalog"} <= set(sources)
    files = tracked_files()
    for source in sources:
        assert (ROOT / source).exists(), source
        under = [f for f in files if f == source or f.startswith(source + "/")]
        assert under and all(in_context(f, context) for f in under if "__pycache__" not in f), source


def test_nothing_private_or_bulky_is_in_the_context() -> None:
    context = patterns()
    for path in (
        ".venv/bin/python",
        "runs/42/bundle.json",
        ".git/config",
        "tests/test_cli.py",
        ".env",
        "orchestrator/.env",
        "deploy/kind/cluster.yaml",
        "secrets/admin.pem",
        "kubeconfig",
        "orchestrator/__pycache__/cli.cpython-311.pyc",
        "marathon.egg-info/PKG-INFO",
        "orchestrator/twin/model/traffic.cpython-311-x86_64-linux-gnu.so",
        "orchestrator/twin/_native__mypyc.cpython-311-x86_64-linux-gnu.so",
        "orchestrator/twin/native.json",
    ):
        assert not in_context(path, context), path
    for path in ("pyproject.toml", "orchestrator/cli.py", "alert_rules/VERSION", "manifests/README.md"):
        assert in_context(path, context), path


def test_a_context_without_a_dockerignore_would_hold_the_venv() -> None:
    assert in_context(".venv/bin/python", dockerignore_patterns(""))
    assert not in_context(".venv/bin/python", dockerignore_patterns(".venv\n"))
    assert in_context("a/b.py", dockerignore_patterns("**\n!a/**\n"))


def test_the_package_builds_from_the_context_alone(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the files")
    context = patterns()
    build = tmp_path / "context"
    for relative in tracked_files():
        if in_context(relative, context):
            target = build / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / relative, target)
    assert not (build / "tests").exists() and not (build / ".venv").exists()
    wheels = tmp_path / "wheels"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(wheels),
            str(build),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = wheels.glob("marathon-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "orchestrator/cli.py" in names
    assert any(name.endswith("entry_points.txt") for name in names)
