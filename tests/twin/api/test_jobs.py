"""batch/v1 Jobs on the twin: served and discovered, Indexed Jobs get one pod per completion index up to
their parallelism, and their status counts what the pods' node reports, ending Complete or Failed."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from orchestrator.twin.apiserver.tables import TABLES, human_duration
from orchestrator.twin.cluster import Cluster
from orchestrator.twin.controllers.jobs import INDEX_ENV, INDEX_KEY, compressed
from orchestrator.twin.store import JOBS, PODS
from orchestrator.twin.timefmt import parse_rfc3339
from tests.twin.api.support import NAMESPACE, LiveServer, run


def _job(name: str, *, completions: int = 3, parallelism: int = 2, backoff: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "completionMode": "Indexed", "completions": completions, "parallelism": parallelism,
            "backoffLimit": backoff,
            "template": {"metadata": {"labels": {"role": "cell"}}, "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "cell", "image": "marathon:dev", "args": ["nightly", "cell"],
                                "env": [{"name": "MODE", "value": "twin"}]}],
            }},
        },
    }  # fmt: skip


def _pods(cluster: Cluster, job: str) -> list[dict[str, Any]]:
    return [p for p in cluster.store.list(PODS, NAMESPACE) if p["metadata"]["labels"].get("job-name") == job]


def _end(cluster: Cluster, pod: dict[str, Any], phase: str) -> None:
    """What a node's kubelet writes when the pod's container exits."""
    code = 0 if phase == "Succeeded" else 1
    state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}
    container = {"name": "cell", "state": state, "ready": False, "restartCount": 0, "image": "marathon:dev"}
    status = {"phase": phase, "containerStatuses": [container]}
    with cluster.lock:
        current = cluster.store.get(PODS, NAMESPACE, pod["metadata"]["name"])
        cluster.store.replace(PODS, {**current, "status": status}, subresource="status")


def test_completed_indexes_are_compressed_as_the_api_writes_them() -> None:
    assert compressed(set()) == ""
    assert compressed({0, 1, 3}) == "0-1,3"
    assert compressed({5, 2, 3, 4, 9, 7}) == "2-5,7,9"


def test_discovery_and_the_official_client_serve_jobs(server: LiveServer) -> None:
    api = config.new_client_from_config(config_file=str(server.kubeconfig))
    batch = client.BatchV1Api(api)
    resources = client.ApisApi(api).get_api_versions()
    assert "batch" in {g.name for g in resources.groups}
    found = {r.name: r for r in batch.get_api_resources().resources}
    assert found["jobs"].kind == "Job" and found["jobs"].namespaced and "all" in found["jobs"].categories
    assert "jobs/status" in found
    created = batch.create_namespaced_job(NAMESPACE, _job("night"))
    assert created.spec.backoff_limit == 1 and created.spec.completion_mode == "Indexed"
    assert batch.read_namespaced_job("night", NAMESPACE).metadata.uid == created.metadata.uid
    assert [j.metadata.name for j in batch.list_namespaced_job(NAMESPACE).items] == ["night"]
    bad = _job("no-policy")
    del bad["spec"]["template"]["spec"]["restartPolicy"]
    with pytest.raises(ApiException) as caught:
        batch.create_namespaced_job(NAMESPACE, bad)
    assert caught.value.status == 422 and "spec.template.spec.restartPolicy" in str(caught.value.body)


def test_an_indexed_job_runs_each_index_once_up_to_its_parallelism_and_completes(cluster: Cluster) -> None:
    with cluster.lock:
        job = cluster.store.create(JOBS, _job("night"))
    run(cluster, 10)
    pods = _pods(cluster, "night")
    assert len(pods) == 2  # parallelism
    for pod in pods:
        index = pod["metadata"]["annotations"][INDEX_KEY]
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["name"].startswith(f"night-{index}-") and len(meta["name"]) == len(f"night-{index}-") + 5
        assert meta["labels"][INDEX_KEY] == index
        assert meta["labels"]["controller-uid"] == job["metadata"]["uid"]
        assert meta["labels"]["job-name"] == "night" and meta["labels"]["role"] == "cell"
        assert meta["ownerReferences"][0]["kind"] == "Job" and meta["ownerReferences"][0]["controller"]
        assert spec["hostname"] == f"night-{index}"
        env = spec["containers"][0]["env"]
        assert env[0]["name"] == INDEX_ENV and INDEX_KEY in env[0]["valueFrom"]["fieldRef"]["fieldPath"]
        assert env[1] == {"name": "MODE", "value": "twin"}
    assert sorted(p["metadata"]["annotations"][INDEX_KEY] for p in pods) == ["0", "1"]
    status = cluster.store.get(JOBS, NAMESPACE, "night")["status"]
    assert status["active"] == 2 and "startTime" in status and "conditions" not in status

    first = next(p for p in pods if p["metadata"]["annotations"][INDEX_KEY] == "1")
    _end(cluster, first, "Succeeded")
    run(cluster, 30)
    assert cluster.store.get(PODS, NAMESPACE, first["metadata"]["name"])["status"]["phase"] == "Succeeded"
    status = cluster.store.get(JOBS, NAMESPACE, "night")["status"]
    assert status["completedIndexes"] == "1" and status["succeeded"] == 1 and status["active"] == 2
    assert sorted(p["metadata"]["annotations"][INDEX_KEY] for p in _pods(cluster, "night")) == ["0", "1", "2"]

    for pod in _pods(cluster, "night"):
        if pod["status"].get("phase") != "Succeeded":
            _end(cluster, pod, "Succeeded")
    run(cluster, 5)
    status = cluster.store.get(JOBS, NAMESPACE, "night")["status"]
    assert status["completedIndexes"] == "0-2" and status["succeeded"] == 3 and "active" not in status
    assert [c["type"] for c in status["conditions"]] == ["Complete"] and "completionTime" in status
    assert len(_pods(cluster, "night")) == 3  # nothing more is started
    row = TABLES["Job"][1](cluster.store.get(JOBS, NAMESPACE, "night"), cluster.now + 600)  # kubectl get jobs
    took = parse_rfc3339(status["completionTime"]) - parse_rfc3339(status["startTime"])
    assert row[:4] == ["night", "Complete", "3/3", human_duration(took)] and took > 0


def test_a_job_past_its_backoff_limit_fails_and_its_pods_outlive_other_deletions(cluster: Cluster) -> None:
    with cluster.lock:
        cluster.store.create(JOBS, _job("flaky", completions=1, parallelism=1, backoff=1))
    run(cluster, 5)
    _end(cluster, _pods(cluster, "flaky")[0], "Failed")
    run(cluster, 5)
    assert len(_pods(cluster, "flaky")) == 2  # a new pod for the failed index
    others = [p for p in cluster.store.list(PODS, NAMESPACE) if "job-name" not in p["metadata"]["labels"]]
    frontend = others[0]
    cluster.delete_pod(NAMESPACE, frontend["metadata"]["name"], graceful=False)  # the garbage collector runs
    run(cluster, 5)
    retry = next(p for p in _pods(cluster, "flaky") if p["status"].get("phase") != "Failed")
    _end(cluster, retry, "Failed")
    run(cluster, 5)
    status = cluster.store.get(JOBS, NAMESPACE, "flaky")["status"]
    assert status["failed"] == 2 and [c["reason"] for c in status["conditions"]] == ["BackoffLimitExceeded"]
    assert {p["status"]["phase"] for p in _pods(cluster, "flaky")} == {"Failed"}
