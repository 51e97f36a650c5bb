"""The resource metrics API reports every running pod, as metrics-server does: a container the app model
does not simulate (a busybox pod beside the app) idles at no CPU and a shell's working set."""

from __future__ import annotations

from orchestrator.twin.apiserver import metrics_api
from orchestrator.twin.cluster import Cluster
from tests.twin.api.support import NODES, ScriptedRuntime

POD = {
    "metadata": {"name": "myapp-pod", "namespace": "default", "labels": {"app": "myapp"}},
    "spec": {"containers": [{"name": "myapp-container", "image": "busybox"}]},
    "status": {"phase": "Running"},
}


def test_a_running_pod_outside_the_model_is_reported_idle() -> None:
    cluster = Cluster(seed=1, nodes=NODES, runtime=ScriptedRuntime())
    found = metrics_api._pod_metrics(cluster, {}, POD)
    assert found is not None and found["metadata"]["name"] == "myapp-pod"
    assert found["containers"] == [{"name": "myapp-container", "usage": {"cpu": "0n", "memory": "1024Ki"}}]
    assert metrics_api._pod_metrics(cluster, {}, {**POD, "status": {"phase": "Pending"}}) is None
