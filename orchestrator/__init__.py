"""marathon: continuous, overlapping fault-injection marathons for scoring autonomous SRE agents."""

from __future__ import annotations

__version__ = "0.1.0"
