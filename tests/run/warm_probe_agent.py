"""An agent module for the warm-start tests: records how it was started, then does what PROBE_MODE says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    mode = os.environ.get("PROBE_MODE", "exit")
    started = {
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "sid": os.getsid(0),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "stdin": sys.stdin.read(),
        "uid": os.getuid(),
    }
    Path("started.json").write_text(json.dumps(started), encoding="utf-8")
    print("probe says hello on stdout")
    print("probe says hello on stderr", file=sys.stderr)
    if mode in ("sleep", "leave-child"):
        child = subprocess.Popen(["sleep", "60"])
        Path("child.pid").write_text(str(child.pid), encoding="utf-8")
    if mode.startswith("escape"):  # a child in a session of its own, outside the agent's process group
        escaped = subprocess.Popen(
            os.environ.get("PROBE_SLEEP", "sleep 4323").split(), start_new_session=True
        )
        Path("escaped.pid").write_text(str(escaped.pid), encoding="utf-8")
    if mode in ("sleep", "escape-hang"):
        time.sleep(60)
    return 3


if __name__ == "__main__":
    sys.exit(main())
