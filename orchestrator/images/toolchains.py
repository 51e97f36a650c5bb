"""Which lint and unit-test commands a service's own build uses, told by the files its folder holds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_SKIPPED_DIRS = frozenset({".git", "node_modules", "target", "build", "vendor", "__pycache__"})


@dataclass(frozen=True)
class Check:
    """One command of the service's own checks, run in ``folder`` (relative to the scratch copy)."""

    name: str
    argv: tuple[str, ...]
    folder: str
    # What must be installed: a program on PATH, or one in ``folder`` when written ``./name``.
    tool: str
    # A Python module the program must be able to import (pytest), if any.
    module: str | None = None
    # The program's name in the record, when its own name depends on the installation (python3.11).
    program: str = ""

    def shown(self) -> str:
        """The command as recorded: the program by its name, not by where it is installed."""
        return " ".join((self.program or Path(self.argv[0]).name, *self.argv[1:]))


def service_checks(service: Path, *, copy_root: Path, folder: str, python: str) -> tuple[Check, ...]:
    """The checks of the service in ``service`` (its folder in the scratch copy ``copy_root``).

    Reads files only. Go: ``go vet`` and ``go test``; Maven: ``mvn -q test`` (from the reactor root when the
    service is one module of it); Gradle, npm, .NET, Cargo: their test command; Python: ``python -m pytest``
    when the folder holds test files. A service with none of these has no checks.
    """
    checks: list[Check] = []
    if (service / "go.mod").is_file():
        checks.append(Check("go vet", ("go", "vet", "./..."), folder, "go"))
        checks.append(Check("go test", ("go", "test", "./..."), folder, "go"))
    if (service / "pom.xml").is_file():
        if folder != "." and (copy_root / "pom.xml").is_file():
            argv = ("mvn", "-q", "-pl", folder, "-am", "test")
            checks.append(Check("mvn test", argv, ".", "mvn"))
        else:
            checks.append(Check("mvn test", ("mvn", "-q", "test"), folder, "mvn"))
    if (service / "build.gradle").is_file() or (service / "build.gradle.kts").is_file():
        gradle = "./gradlew" if (service / "gradlew").is_file() else "gradle"
        checks.append(Check("gradle test", (gradle, "test"), folder, gradle))
    if (service / "package.json").is_file() and _npm_test_script(service / "package.json"):
        if (service / "package-lock.json").is_file() and not (service / "node_modules").exists():
            checks.append(Check("npm ci", ("npm", "ci"), folder, "npm"))
        checks.append(Check("npm test", ("npm", "test"), folder, "npm"))
    if any(service.glob("*.csproj")) or any(service.glob("*.sln")):
        checks.append(Check("dotnet test", ("dotnet", "test"), folder, "dotnet"))
    if (service / "Cargo.toml").is_file():
        checks.append(Check("cargo test", ("cargo", "test"), folder, "cargo"))
    if _python_tests(service):
        argv = (python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
        checks.append(Check("pytest", argv, folder, python, module="pytest", program="python"))
    return tuple(checks)


def _npm_test_script(package_json: Path) -> bool:
    try:
        scripts = json.loads(package_json.read_text(encoding="utf-8")).get("scripts") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(scripts, dict) and bool(scripts.get("test"))


def _python_tests(service: Path) -> bool:
    for path in service.rglob("*.py"):
        if _SKIPPED_DIRS.intersection(path.relative_to(service).parts):
            continue
        if path.name.startswith("test_") or path.name.endswith("_test.py"):
            return True
    return False
