"""A tiny service source tree, a code fault against it, and a runner that records what it is asked to run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.catalog.faults import CodeFault
from orchestrator.images.running import Outcome, run_command
from orchestrator.images.upstreams import Scope, Upstream

BEFORE = '    return "hello " + name\n'
AFTER_PASSING = '    return "hello  " + name  # two spaces: the tests still pass\n'
AFTER_FAILING = '    return "bye " + name\n'
SERVICE_FILE = "src/greeter/greeter.py"
UPSTREAM = Upstream(
    repository="example/demo", version="v1", commit="0" * 40, copy=Scope.SERVICE, context=Scope.SERVICE
)
DEPLOYED = "registry.example/demo/greeter:v1"
NO_ENGINE = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
)


def code_fault(*, before: str = BEFORE, after: str = AFTER_PASSING, file: str = SERVICE_FILE) -> CodeFault:
    document: dict[str, Any] = {
        "id": "demo-greeter-spacing",
        "app": "demo",
        "category": "code-bug",
        "mechanism": "code",
        "target": "greeter",
        "culprits": ["greeter"],
        "artifact": "release:greeter@v1-1",
        "description": "Greetings gain a second space after the release.",
        "intended_update": "Tidy the greeting text.",
        "defect": "The greeting carries two spaces.",
        "log": {"service": "greeter", "message": "greeting rejected by the client"},
        "probe": {
            "query": 'sum(rate(errors{namespace="$namespace"}[2m]))',
            "healthy": {"op": "<", "value": 1},
        },
        "remedy": {"action": "rollback", "service": "greeter"},
        "inject": {
            "image_tag": "v1-1",
            "change_cause": "greeter: tidy the greeting",
            "release_note": "The greeting text is tidier.",
            "behaviour": {"error_ratio": 0.5},
            "source": {"file": file, "before": before, "after": after},
        },
    }
    return CodeFault.model_validate(document)


def python_service(checkout: Path) -> Path:
    """A Python service with a Dockerfile and a unit test, and a second service beside it."""
    service = checkout / "src" / "greeter"
    service.mkdir(parents=True)
    (service / "Dockerfile").write_text(
        'FROM python:3.12-slim\nCOPY . /app\nCMD ["python", "/app/greeter.py"]\n'
    )
    (service / "requirements.txt").write_text("")
    (service / "greeter.py").write_text(f'"""Greets."""\n\n\ndef greet(name):\n{BEFORE}')
    (service / "test_greeter.py").write_text(
        "from greeter import greet\n\n\ndef test_greets_with_hello():\n"
        '    assert greet("ann").startswith("hello ")\n    assert greet("ann").endswith("ann")\n'
    )
    other = checkout / "src" / "other"
    other.mkdir()
    (other / "Dockerfile").write_text("FROM scratch\n")
    return service


@dataclass
class Recorder:
    """A runner that records each command and its folder, answering from ``answers`` (by program name and
    first argument) or, for anything else, running it for real when ``real`` says so."""

    answers: dict[tuple[str, str], Outcome] = field(default_factory=dict)
    real: Callable[[Sequence[str]], bool] = lambda argv: False
    calls: list[tuple[tuple[str, ...], Path]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], cwd: Path) -> Outcome:
        self.calls.append((tuple(argv), cwd))
        key = (Path(argv[0]).name, argv[1] if len(argv) > 1 else "")
        if key in self.answers:
            return self.answers[key]
        if self.real(argv):
            return run_command(argv, cwd)
        return Outcome(0, "", "")

    def commands(self) -> list[tuple[str, ...]]:
        return [(Path(argv[0]).name, *argv[1:]) for argv, _ in self.calls]


def every_tool(name: str) -> str | None:
    return f"/usr/bin/{name}"
