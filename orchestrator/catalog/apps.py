"""The app registry: an application exists when ``manifests/<app>/topology.yaml`` does.

Nothing else lists the apps. Command-line choices, the run configuration, the catalog loader and the twin
ask here, so a new app is its manifests folder, its fault catalog folder and its alert rule file.
"""

from __future__ import annotations

from pathlib import Path

# orchestrator/catalog/apps.py -> the repository root, the folder that holds manifests/.
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def app_names(*, root: Path | None = None) -> tuple[str, ...]:
    """Every app with a topology file below ``root`` (the repository root by default), sorted by name."""
    manifests = (root if root is not None else REPOSITORY_ROOT) / "manifests"
    if not manifests.is_dir():
        return ()
    return tuple(sorted(path.parent.name for path in manifests.glob("*/topology.yaml")))


def listed(apps: tuple[str, ...]) -> str:
    """The apps for a message, or "none"."""
    return ", ".join(apps) or "none"
