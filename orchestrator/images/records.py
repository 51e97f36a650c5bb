"""``fault_catalog/<app>/images.json``: what was built for each code fault, beside the catalog entry.

Deterministic JSON (sorted keys, no times): the same source, entry and tools give the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.errors import InputError, Problem

Status = Literal["ran", "skipped", "failed"]


@dataclass(frozen=True)
class Step:
    """One step of a build: what ran, or why it did not."""

    name: str
    status: Status
    detail: str
    command: str = ""


@dataclass(frozen=True)
class ImageRecord:
    entry_id: str
    entry_hash: str
    service: str
    pinned_source: str
    checkout_commit: str | None
    source_file: str
    source_sha256_before: str
    source_sha256_after: str
    image: str
    image_tag: str
    digest: str | None
    published: str | None
    steps: tuple[Step, ...]

    @property
    def failed(self) -> bool:
        return any(step.status == "failed" for step in self.steps)

    def as_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["steps"] = [asdict(step) for step in self.steps]
        return record


def images_path(app: str, *, root: Path) -> Path:
    return root / "fault_catalog" / app / "images.json"


def write_records(app: str, records: list[ImageRecord], *, root: Path) -> Path:
    """Merge ``records`` into the app's images.json (other entries kept) and write it."""
    path = images_path(app, root=root)
    images = _read_images(path)
    for record in records:
        images[record.entry_id] = record.as_json()
    document = {"app": app, "images": images}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    return path


def _read_images(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError("images", [Problem(str(path), None, "", "", f"unreadable: {exc}")]) from exc
    images = document.get("images") if isinstance(document, dict) else None
    if not isinstance(images, dict):
        problem = Problem(str(path), None, "images", "", "expected a mapping of entry ids")
        raise InputError("images", [problem])
    return images
