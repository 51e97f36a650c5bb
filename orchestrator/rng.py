"""Seeded randomness, one independent stream per concern, derived from the run seed by name."""

from __future__ import annotations

import hashlib
import random


def derive(seed: int, concern: str) -> random.Random:
    """A ``random.Random`` for ``concern`` that depends only on ``seed`` and the name (no side effects)."""
    digest = hashlib.sha256(f"{seed}:{concern}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
