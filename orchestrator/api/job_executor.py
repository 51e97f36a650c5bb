"""A night's matrix as one Kubernetes Indexed Job: a pod per cell, each running that cell's twin marathon
(``marathon nightly cell``) into a bundles volume; then each cell's sealed bundle is verified and its score
registered in the run registry, as the local executor's runs are.

``job_documents`` plans (no side effects), ``run_as_job`` creates and waits, ``collect`` registers; the cell
itself is ``run_cell``, which runs exactly the configuration the local executor would.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from orchestrator.api.events import EventLog
from orchestrator.api.models import RunRequest
from orchestrator.api.nightly import Cell, night_source
from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import Registry
from orchestrator.api.runs import claim, config_for, row_fields, wall_now
from orchestrator.bundle.seal import is_sealed
from orchestrator.bundle.verify import read_verified_bundle
from orchestrator.cluster.client import KubeClient, ObjectRef
from orchestrator.errors import BundleError, ConfigError, Problem
from orchestrator.run.config import RunConfig
from orchestrator.run.events import Finished, Phase, Started
from orchestrator.run.finishing import BUNDLE_DIR, SCORE_JSON
from orchestrator.run.runner import RunResult, run_marathon

INDEX_ENV = "JOB_COMPLETION_INDEX"
MATRIX_DIR = "/etc/marathon"
MATRIX_KEY = "matrix.json"
MATRIX_PATH = f"{MATRIX_DIR}/{MATRIX_KEY}"
CLAIM_MOUNT = "/var/lib/marathon/bundles"  # where a claimed volume is mounted (a hostPath: at its own path)
CONTAINER = "cell"
POLL_S = 1.0
# What one cell's pod asks of its node: a twin, its Prometheus and the agent.
CELL_REQUESTS = {"cpu": "1", "memory": "2Gi"}


def job_name(night: str) -> str:
    """The Job's (and ConfigMap's) name of a night: a DNS label from its UTC start (no side effects)."""
    return "marathon-night-" + re.sub(r"[^0-9a-z]", "", night.lower())


def job_documents(
    cells: Sequence[RunRequest],
    *,
    night: str,
    image: str,
    namespace: str,
    bundles_path: str | Path,
    claim_name: str | None = None,
    parallelism: int = 1,
) -> list[dict[str, Any]]:
    """A ConfigMap holding the cells (each a ``RunRequest``'s JSON) and an Indexed Job running cell ``i`` in
    pod ``i`` into ``<volume>/<job name>/<i>/`` (no side effects). The volume is the node's directory
    ``bundles_path``, mounted at the same path so a cell's command means the same on the node, or the claim
    ``claim_name`` mounted at ``CLAIM_MOUNT``. Only twin cells run this way (each pod brings its own twin);
    ``ConfigError`` names any other."""
    problems = [
        Problem("nightly matrix", None, f"cells[{i}].backend", cell.backend, "a Job's cells run on the twin")
        for i, cell in enumerate(cells)
        if cell.backend != "twin"
    ]  # fmt: skip
    if problems or not cells:
        why = problems or [Problem("nightly matrix", None, "cells", "[]", "no cell to run")]
        raise ConfigError("the matrix cannot run as a Kubernetes Job", why)
    name = job_name(night)
    mount = CLAIM_MOUNT if claim_name else str(bundles_path)
    out = f"{mount.rstrip('/')}/{name}"
    labels = {"app.kubernetes.io/name": "marathon", "app.kubernetes.io/component": "nightly-cell",
              "marathon.dev/night": name.removeprefix("marathon-night-")}  # fmt: skip
    matrix = {"night": night, "cells": [cell.model_dump(mode="json") for cell in cells]}
    volume: dict[str, Any] = (
        {"name": "bundles", "persistentVolumeClaim": {"claimName": claim_name}}
        if claim_name
        else {"name": "bundles", "hostPath": {"path": str(bundles_path), "type": "DirectoryOrCreate"}}
    )
    config_map = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {MATRIX_KEY: json.dumps(matrix, indent=2, sort_keys=True) + "\n"},
    }  # fmt: skip
    container = {
        "name": CONTAINER, "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["marathon", "nightly", "cell", "--matrix", MATRIX_PATH, "--out", out],
        "resources": {"requests": dict(CELL_REQUESTS)},
        "volumeMounts": [{"name": "matrix", "mountPath": MATRIX_DIR, "readOnly": True},
                         {"name": "bundles", "mountPath": mount}],
    }  # fmt: skip
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "completionMode": "Indexed", "completions": len(cells), "parallelism": max(1, parallelism),
            # A failed cell is not retried (its directory is no longer empty) and does not end the others.
            "backoffLimit": len(cells),
            "template": {"metadata": {"labels": labels}, "spec": {
                "restartPolicy": "Never", "containers": [container],
                "volumes": [{"name": "matrix", "configMap": {"name": name}}, volume],
            }},
        },
    }  # fmt: skip
    return [config_map, job]


@dataclass(frozen=True)
class JobOutcome:
    """How the Job ended: its Complete or Failed condition, or not in time (or asked to stop)."""

    status: Literal["Complete", "Failed", "TimedOut"]
    job: dict[str, Any]


def job_condition(job: dict[str, Any]) -> Literal["Complete", "Failed"] | None:
    """The Job's terminal condition, if it has one (no side effects)."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed"):
            return "Complete" if condition["type"] == "Complete" else "Failed"
    return None


def run_as_job(
    client: KubeClient,
    documents: Sequence[dict[str, Any]],
    *,
    timeout_s: float,
    stop: threading.Event | None = None,
    poll_s: float = POLL_S,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> JobOutcome:
    """Create the documents (a ConfigMap and the Job, in their namespace), then wait for the Job's
    Complete or Failed condition; ``progress`` hears of every change of its status."""
    stop = stop or threading.Event()
    job_doc = next(d for d in documents if d["kind"] == "Job")
    namespace = job_doc["metadata"]["namespace"]
    client.ensure_namespace(namespace)
    for document in documents:
        client.create(document["kind"], namespace=namespace, body=document)
    ref = ObjectRef("Job", namespace, job_doc["metadata"]["name"])
    deadline = time.monotonic() + timeout_s  # wall-clock bookkeeping only
    seen: dict[str, Any] | None = None
    while True:
        job = client.read(ref)
        if progress is not None and job.get("status") != seen:
            progress(job)
        seen = job.get("status")
        ended = job_condition(job)
        if ended is not None:
            return JobOutcome(ended, job)
        if time.monotonic() >= deadline or stop.wait(poll_s):
            return JobOutcome("TimedOut", job)


def read_matrix(path: Path) -> list[RunRequest]:
    """The cells of a matrix file (the ConfigMap's ``matrix.json``); ``ConfigError`` naming the file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the matrix: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise ConfigError("not a matrix", [Problem(str(path), None, "cells", "", "expected a list of runs")])
    try:
        return [RunRequest.model_validate(cell) for cell in cells]
    except ValidationError as exc:
        problems = [Problem(str(path), None, "cells." + ".".join(str(p) for p in e["loc"]),
                            repr(e.get("input")), e["msg"]) for e in exc.errors()]  # fmt: skip
        raise ConfigError(f"{path}: invalid matrix", problems) from None


def cell_config(request: RunRequest, *, run_dir: Path, runs_root: Path) -> RunConfig:
    """The local executor's configuration of the cell (``config_for``), run in ``run_dir``."""
    return config_for(request, home=run_dir, runs_root=runs_root).model_copy(update={"out": run_dir})


def run_cell(matrix: Path, *, out: Path, index: int) -> RunResult:
    """Run cell ``index`` of the matrix into ``out/<index>/`` (the bundle and score.json beside it)."""
    cells = read_matrix(matrix)
    if not 0 <= index < len(cells):
        problem = Problem("command line", None, "--index", str(index),
                          f"the matrix {matrix} has cells 0-{len(cells) - 1}")  # fmt: skip
        raise ConfigError("no such cell", [problem])
    return run_marathon(cell_config(cells[index], run_dir=out / str(index), runs_root=out))


def collect(
    bundles_dir: Path,
    registry: Registry,
    *,
    cells: Sequence[RunRequest],
    night: str,
    data_dir: Path,
    job: str = "",
) -> list[Cell]:
    """Register cell ``i``'s run from ``bundles_dir/<i>/`` (``bundles_dir``: the volume's ``<job name>``):
    finished (or stopped) with its score when its bundle is sealed and verifies and its score.json is
    there, failed naming what is missing otherwise."""
    return [
        _register(bundles_dir / str(index), registry, request=request, index=index, night=night,
                  data_dir=data_dir, job=job)
        for index, request in enumerate(cells)
    ]  # fmt: skip


def _register(
    run_dir: Path,
    registry: Registry,
    *,
    request: RunRequest,
    index: int,
    night: str,
    data_dir: Path,
    job: str,
) -> Cell:
    bundle_path = run_dir / BUNDLE_DIR
    score: dict[str, Any] | None = None
    error = ""
    try:
        bundle = read_verified_bundle(bundle_path) if is_sealed(bundle_path) else None
    except BundleError as exc:
        bundle, error = None, str(exc)
    if bundle is None:
        error = error or f"{bundle_path}: no sealed bundle (the cell's pod did not finish)"
    else:
        try:
            score = json.loads((run_dir / SCORE_JSON).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            error = f"{run_dir / SCORE_JSON}: no score: {exc}"
    base = bundle.manifest.run_id if bundle is not None else f"{job or 'job'}-{index}"
    homes = data_dir / "runs"
    # As the cell ran it: the bundles directory is its runs root (a no-action baseline is cached there).
    config = cell_config(request, run_dir=run_dir.resolve(), runs_root=run_dir.parent.resolve())

    def fields(run_id: str, home: Path) -> dict[str, Any]:
        document = config.model_copy(update={"run_id": base})
        return row_fields(document, run_id=run_id, home=home, source=night_source(night), target=None)

    row = claim(registry, base=base, homes=homes, fields=fields)
    (row.home / RUN_DIR).symlink_to(run_dir.resolve(), target_is_directory=True)
    log = EventLog(home=row.home)
    log.append(Started(app=request.app, agent=config.agent_name, seed=request.seed))
    log.append(Phase(f"ran as index {index} of Kubernetes Job {job}" if job else f"ran as Job index {index}"))
    if bundle is not None and score is not None:
        reason = bundle.ended.reason if bundle.ended is not None else "completed"
        status = "finished" if reason == "completed" else "stopped"
        registry.update(
            row.id, status=status, reason=reason, score=score, runner_run_id=base, ended_at=wall_now(),
            injections=len(bundle.injected), reverts=len(bundle.reverted), failures=len(bundle.failed),
            invocations=len(bundle.invocations), active_faults=[],
        )  # fmt: skip
    else:
        status = "failed"
        registry.update(row.id, status=status, reason="error", error=error[:4000], ended_at=wall_now())
    log.append(Finished(status=status))
    log.close()
    return Cell(
        request, row.id, status, error, score=None if score is None else score.get("marathon_score"),
        bundle=bundle_path if bundle is not None else None,
    )  # fmt: skip
