"""A night's matrix as a Kubernetes Indexed Job: its ConfigMap and Job validate against the pinned
Kubernetes schemas, ``marathon nightly cell`` runs one cell as the local executor would, and a matrix run
through the Job on the twin (this test playing the node that runs the pods) registers the same scores as
the same matrix run by the local executor."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes import client, config

from orchestrator.api.job_executor import (
    CLAIM_MOUNT,
    MATRIX_PATH,
    job_condition,
    job_documents,
    job_name,
    read_matrix,
)
from orchestrator.api.models import RunRequest, ScheduleOverrides
from orchestrator.api.recovery import RUN_DIR
from orchestrator.api.registry import Registry
from orchestrator.bundle.seal import is_sealed
from orchestrator.cli import main
from orchestrator.errors import ConfigError
from orchestrator.run.finishing import BUNDLE_DIR
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.resources import KUBERNETES_VERSION

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "orchestrator.cli"]
TINY = {"faults": 2, "injection_period_s": 120, "observation_period_s": 120}
NIGHT = "2026-12-02T02:00:00.000Z"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
CELL_SELECTOR = "app.kubernetes.io/component=nightly-cell"
RUN_TIMEOUT_S = 900.0
FIELD_REF = re.compile(r"^metadata\.annotations\['(?P<key>[^']+)'\]$")


def _schema_version() -> str:
    """kubernetes-validate ships one schema set per minor version: the twin's minor, patch 0."""
    major, minor, _ = KUBERNETES_VERSION.removeprefix("v").split(".")
    return f"{major}.{minor}.0"


def _cells(*seeds: int, agent: str = "runbook") -> list[RunRequest]:
    schedule = ScheduleOverrides(**TINY)
    return [
        RunRequest(app="online-boutique", agent=agent, seed=seed, baseline=False, schedule=schedule)
        for seed in seeds
    ]


def test_the_job_and_its_configmap_validate_against_the_pinned_kubernetes_schemas(tmp_path: Path) -> None:
    version = _schema_version()
    for claim in (None, "marathon-bundles"):
        documents = job_documents(
            _cells(1, 2), night=NIGHT, image="marathon:dev", namespace="marathon",
            bundles_path=tmp_path / "bundles", claim_name=claim, parallelism=2,
        )  # fmt: skip
        assert [d["kind"] for d in documents] == ["ConfigMap", "Job"]
        for document in documents:
            kubernetes_validate.validate(document, version, strict=True)
        config_map, job = documents
        spec = job["spec"]
        assert spec["completionMode"] == "Indexed" and spec["completions"] == 2 and spec["parallelism"] == 2
        pod = spec["template"]["spec"]
        command = pod["containers"][0]["command"]
        mount = CLAIM_MOUNT if claim else str(tmp_path / "bundles")
        assert command == ["marathon", "nightly", "cell", "--matrix", MATRIX_PATH, "--out",
                           f"{mount}/{job_name(NIGHT)}"]  # fmt: skip
        volume = next(v for v in pod["volumes"] if v["name"] == "bundles")
        if claim:
            assert volume["persistentVolumeClaim"] == {"claimName": claim}
        else:
            assert volume["hostPath"]["path"] == str(tmp_path / "bundles")
        assert config_map["metadata"]["name"] == next(v for v in pod["volumes"] if "configMap" in v)[
            "configMap"]["name"]  # fmt: skip
        matrix = tmp_path / "matrix.json"
        matrix.write_text(config_map["data"]["matrix.json"], encoding="utf-8")
        assert read_matrix(matrix) == _cells(1, 2)
    broken = job_documents(_cells(1), night=NIGHT, image="marathon:dev", namespace="marathon",
                           bundles_path=tmp_path)[1]  # fmt: skip
    broken["spec"]["completions"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, _schema_version(), strict=True)


def test_a_matrix_with_a_real_cluster_cell_is_refused_naming_the_cell() -> None:
    cells = [*_cells(1), RunRequest(app="online-boutique", agent="noop", seed=2, backend="kube",
                                    kubeconfig="/k", prometheus_url="http://p")]  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        job_documents(cells, night=NIGHT, image="i", namespace="n", bundles_path="/b")
    assert "cells[1].backend = kube" in str(caught.value)


def test_a_cell_without_an_index_or_out_of_range_is_one_clear_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config_map = job_documents(_cells(1, 2), night=NIGHT, image="i", namespace="n", bundles_path=tmp_path)[0]
    matrix = tmp_path / "matrix.json"
    matrix.write_text(config_map["data"]["matrix.json"], encoding="utf-8")
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    cases = [([], "--index", "JOB_COMPLETION_INDEX"), (["--index", "2"], "--index = 2", "cells 0-1")]
    for extra, *needles in cases:
        assert main(["nightly", "cell", "--matrix", str(matrix), "--out", str(tmp_path / "out"), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and all(n in err[0] for n in needles), err
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "first")
    assert main(["nightly", "cell", "--matrix", str(matrix), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "$JOB_COMPLETION_INDEX = first" in err[0], err
    assert not (tmp_path / "out").exists()


def test_the_job_executor_without_its_options_says_which_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nightly = tmp_path / "nightly.yaml"
    nightly.write_text(yaml.safe_dump({"cron": "0 2 * * *", "apps": ["online-boutique"], "agents": ["noop"],
                                       "seeds": [1]}), encoding="utf-8")  # fmt: skip
    code = main(["nightly", "--executor", "job", "--config", str(nightly), "--data", str(tmp_path / "d")])
    assert code == 2
    err = capsys.readouterr().err
    assert all(option in err for option in ("--kubeconfig", "--image", "--bundles", "--once")), err
    assert not (tmp_path / "d").exists()


class Node:
    """Plays the kubelet of the twin's node for the cells' pods: runs each pod's command here, with its
    ConfigMap volume written out and its hostPath as it is, the completion index from its annotation, then
    writes the pod's terminal status through the status subresource. Steps the twin while it waits."""

    def __init__(self, twin: RunningTwin, *, namespace: str, workdir: Path) -> None:
        self.twin = twin
        self.namespace = namespace
        self.workdir = workdir
        self.api = config.new_client_from_config(config_file=str(twin.kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.stop = threading.Event()
        self.started: dict[str, threading.Thread] = {}
        self.exits: dict[str, int] = {}
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._loop, name="node", daemon=True)

    def __enter__(self) -> Node:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        for pod in self.started.values():
            pod.join(timeout=RUN_TIMEOUT_S)
        self.api.close()

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                self.twin.advance(5.0)
                pods = self.core.list_namespaced_pod(self.namespace, label_selector=CELL_SELECTOR).items
                for pod in (self.api.sanitize_for_serialization(p) for p in pods):
                    name = pod["metadata"]["name"]
                    if name not in self.started and pod.get("status", {}).get("phase") not in ("Succeeded",
                                                                                              "Failed"):
                        self.started[name] = threading.Thread(target=self._play, args=(pod,), daemon=True)
                        self.started[name].start()
                self.stop.wait(0.2)
        except BaseException as exc:  # told by the test
            self.errors.append(exc)

    def _play(self, pod: dict[str, Any]) -> None:
        try:
            code = self._run(pod)
        except BaseException as exc:
            self.errors.append(exc)
            code = 128
        self.exits[pod["metadata"]["name"]] = code
        container = pod["spec"]["containers"][0]
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
        status = {"phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": [
            {"name": container["name"], "image": container["image"], "imageID": "", "ready": False,
             "restartCount": 0, "started": False, "state": {"terminated": terminated}},
        ]}  # fmt: skip
        self.core.patch_namespaced_pod_status(pod["metadata"]["name"], self.namespace, {"status": status})

    def _run(self, pod: dict[str, Any]) -> int:
        name, spec = pod["metadata"]["name"], pod["spec"]
        container = spec["containers"][0]
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts: dict[str, str] = {}
        for mount in container["volumeMounts"]:
            volume = volumes[mount["name"]]
            if "configMap" in volume:
                local = self.workdir / name / mount["name"]
                local.mkdir(parents=True)
                data = self.core.read_namespaced_config_map(volume["configMap"]["name"], self.namespace).data
                for key, text in data.items():
                    (local / key).write_text(text, encoding="utf-8")
                mounts[mount["mountPath"]] = str(local)
            else:
                Path(volume["hostPath"]["path"]).mkdir(parents=True, exist_ok=True)  # DirectoryOrCreate
                mounts[mount["mountPath"]] = volume["hostPath"]["path"]

        def here(arg: str) -> str:
            for inside, outside in mounts.items():
                if arg == inside or arg.startswith(inside.rstrip("/") + "/"):
                    return outside + arg[len(inside) :]
            return arg

        command = container["command"]
        assert command[0] == "marathon", command
        env = {k: v for k, v in os.environ.items() if k != "JOB_COMPLETION_INDEX"}
        for item in container.get("env") or []:
            ref = (item.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath", "")
            found = FIELD_REF.match(ref)
            annotations = pod["metadata"]["annotations"]
            env[item["name"]] = annotations[found["key"]] if found else item.get("value", "")
        with (self.workdir / f"{name}.log").open("w", encoding="utf-8") as log:
            done = subprocess.run([*CLI, *map(here, command[1:])], env=env, cwd=REPO, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False)  # fmt: skip
        return done.returncode


Scores = dict[tuple[str, str, int], tuple[str, float | None, str | None]]


def _scores(registry: Registry, night: str) -> Scores:
    _total, rows = registry.page(source=f"nightly {night}", limit=100)
    assert all(row.source == f"nightly {night}" for row in rows)
    for row in rows:
        assert is_sealed(row.home / RUN_DIR / BUNDLE_DIR), row.id
    return {(r.app, r.agent, r.seed): (r.status, r.marathon_score, r.runner_run_id) for r in rows}


def _night(stdout: str) -> str:
    found = re.search(r"^night (\S+): ", stdout, flags=re.MULTILINE)
    assert found, stdout
    return found[1]


def test_a_matrix_run_as_an_indexed_job_registers_the_scores_the_local_executor_does(tmp_path: Path) -> None:
    nightly = tmp_path / "nightly.yaml"
    nightly.write_text(yaml.safe_dump({
        "cron": "0 2 * * *", "apps": ["online-boutique"], "agents": ["runbook"], "seeds": [1, 2],
        "concurrency": 2, "baseline": False, "schedule": TINY,
    }), encoding="utf-8")  # fmt: skip
    data, bundles, namespace = tmp_path / "control", tmp_path / "bundles", "marathon"
    registry_options = ["--config", str(nightly), "--data", str(data)]
    with start_twin("online-boutique", seed=1, kubeconfig=tmp_path / "twin.kubeconfig") as twin:
        with Node(twin, namespace=namespace, workdir=tmp_path / "node") as node:
            as_job = subprocess.run(
                [*CLI, "nightly", "--once", "--executor", "job", *registry_options, "--kubeconfig",
                 str(twin.kubeconfig), "--image", "marathon:dev", "--bundles", str(bundles), "--namespace",
                 namespace, "--timeout", str(RUN_TIMEOUT_S)],
                cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
            )  # fmt: skip
        assert not node.errors, node.errors
        assert as_job.returncode == 0, as_job.stdout + as_job.stderr
        night = _night(as_job.stdout)
        name = job_name(night)
        assert f"job {namespace}/{name}: Complete" in as_job.stdout
        assert sorted(node.exits.values()) == [0, 0]

        api = config.new_client_from_config(config_file=str(twin.kubeconfig))
        try:
            job = api.sanitize_for_serialization(client.BatchV1Api(api).read_namespaced_job(name, namespace))
            pods = [api.sanitize_for_serialization(p) for p in client.CoreV1Api(api).list_namespaced_pod(
                namespace, label_selector=f"job-name={name}").items]  # fmt: skip
        finally:
            api.close()
    assert job_condition(job) == "Complete"
    assert job["status"]["completedIndexes"] == "0-1" and job["status"]["succeeded"] == 2
    assert sorted(p["metadata"]["annotations"][INDEX_KEY] for p in pods) == ["0", "1"]
    for pod in pods:
        index = pod["metadata"]["annotations"][INDEX_KEY]
        assert pod["metadata"]["labels"][INDEX_KEY] == index and pod["spec"]["hostname"] == f"{name}-{index}"
        assert pod["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
        env = pod["spec"]["containers"][0]["env"]
        assert env[0]["name"] == "JOB_COMPLETION_INDEX"
        assert INDEX_KEY in env[0]["valueFrom"]["fieldRef"]["fieldPath"]
        assert pod["status"]["phase"] == "Succeeded"
        assert is_sealed(bundles / name / index / BUNDLE_DIR)
        assert json.loads((bundles / name / index / "score.json").read_text())["marathon_score"] is not None

    local = subprocess.run([*CLI, "nightly", "--once", *registry_options], cwd=REPO, capture_output=True,
                           text=True, timeout=RUN_TIMEOUT_S, check=False)  # fmt: skip
    assert local.returncode == 0, local.stdout + local.stderr

    registry = Registry(f"sqlite:///{(data / 'registry.sqlite').resolve()}")
    by_job, by_local = _scores(registry, night), _scores(registry, _night(local.stdout))
    assert set(by_job) == set(by_local) == {("online-boutique", "runbook", seed) for seed in (1, 2)}
    for cell, (status, score, identity) in by_job.items():
        assert status == "finished" and score is not None, (cell, by_job)
        assert (status, score, identity) == by_local[cell], (cell, by_job[cell], by_local[cell])
    assert len({score for _status, score, _identity in by_job.values()}) == 2  # two seeds, two scores
