"""Chaos Toolkit activities as JSON: what a mechanism does, in the form an experiment file writes it.

The chaos mechanism runs these very activities through ``orchestrator.cluster.executing``; every mechanism
hands them to ``marathon catalog export-ctk`` as the method and rollbacks of a standalone experiment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from orchestrator.cluster.fields import Patch

Json = dict[str, Any]


@dataclass(frozen=True)
class Steps:
    """The activities that inject a fault (``method``) and those that take it out again (``rollbacks``)."""

    method: list[Json]
    rollbacks: list[Json] = field(default_factory=list)


def python_action(name: str, module: str, func: str, arguments: Json) -> Json:
    """A ``python`` provider action: ``module.func(**arguments)``, as ``chaoslib`` runs it."""
    provider = {"type": "python", "module": module, "func": func, "arguments": arguments}
    return {"type": "action", "name": name, "provider": provider}


def kubectl_patch(name: str, *, kind: str, object_name: str, namespace: str, patch: Patch) -> Json:
    """A ``process`` provider action running ``kubectl patch`` with ``patch``."""
    style = "strategic" if patch.style == "strategic" else "json"
    arguments = [
        "patch",
        kind,
        object_name,
        "-n",
        namespace,
        "--type",
        style,
        "-p",
        json.dumps(patch.body, sort_keys=True),
    ]
    return {
        "type": "action",
        "name": name,
        "provider": {"type": "process", "path": "kubectl", "arguments": arguments},
    }
