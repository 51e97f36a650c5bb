"""The one seam through which the image pipeline runs programs (git, the service's tests, docker, kind).

Tests pass their own runner and tool finder and check the exact commands; nothing else starts a process.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def last_line(self) -> str:
        """The last non-empty line of what the program said, for a one-line reason."""
        lines = [line.strip() for line in (self.stderr or self.stdout).splitlines() if line.strip()]
        return lines[-1] if lines else f"exit status {self.returncode}"


# Runs ``argv`` in the folder ``cwd`` and waits for it.
Runner = Callable[[Sequence[str], Path], Outcome]
# Where a program is, or None when it is not installed.
ToolFinder = Callable[[str], str | None]


def run_command(argv: Sequence[str], cwd: Path) -> Outcome:
    """Run a program to completion, capturing its output; a program that cannot start is exit status 127."""
    try:
        done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        return Outcome(127, "", str(exc))
    return Outcome(done.returncode, done.stdout, done.stderr)


def find_tool(name: str) -> str | None:
    return shutil.which(name)
