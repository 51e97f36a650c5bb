"""The status the twin's Chaos Mesh reports: whether an experiment selects a pod and whether it runs."""

from __future__ import annotations

import copy

from orchestrator.twin.controllers.chaos import ChaosStatusController
from orchestrator.twin.resources import BY_PLURAL
from orchestrator.twin.store import NAMESPACES, PODS, Obj, Store
from orchestrator.twin.timefmt import parse_rfc3339

POD_CHAOS = BY_PLURAL[("chaos-mesh.org", "podchaos")]
NAMESPACE = "shop"


def _pod(name: str, app: str) -> Obj:
    return {
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "shop/web:1"}]},
    }


def _flags(store: Store) -> dict[str, str]:
    chaos = store.get(POD_CHAOS, NAMESPACE, "kill-web")
    return {c["type"]: c["status"] for c in chaos["status"]["conditions"]}


def test_an_experiment_is_selected_while_a_pod_matches_through_pod_and_selector_changes() -> None:
    # The controller keeps whether each selector matched until the experiment or a pod changes: every
    # step here changes one of them, or neither, and the status says what a fresh look says.
    store = Store(seed=1)
    store.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    chaos = store.create(
        POD_CHAOS,
        {
            "apiVersion": "chaos-mesh.org/v1alpha1",
            "kind": "PodChaos",
            "metadata": {"name": "kill-web", "namespace": NAMESPACE},
            "spec": {"action": "pod-kill", "mode": "all", "duration": "30s", "selector": {
                "namespaces": [NAMESPACE], "labelSelectors": {"app": "web"}}},
        },
    )  # fmt: skip
    created = parse_rfc3339(chaos["metadata"]["creationTimestamp"])
    controller = ChaosStatusController(store)

    def synced(now: float) -> dict[str, str]:
        controller.sync(created + now)
        fresh = ChaosStatusController(store).selects_any(store.get(POD_CHAOS, NAMESPACE, "kill-web"))
        flags = _flags(store)
        assert flags["Selected"] == str(fresh)
        return flags

    assert synced(1.0)["Selected"] == "False"
    store.create(PODS, _pod("web-1", "web"))
    assert synced(2.0)["Selected"] == "True"
    assert synced(3.0) == {
        "Selected": "True",
        "AllInjected": "True",
        "AllRecovered": "False",
        "Paused": "False",
    }
    relabelled = copy.deepcopy(store.get(PODS, NAMESPACE, "web-1"))
    relabelled["metadata"]["labels"]["app"] = "other"
    store.replace(PODS, relabelled)
    assert synced(4.0)["Selected"] == "False"
    respecced = copy.deepcopy(store.get(POD_CHAOS, NAMESPACE, "kill-web"))
    respecced["spec"]["selector"]["labelSelectors"] = {"app": "other"}
    store.replace(POD_CHAOS, respecced)
    assert synced(5.0)["Selected"] == "True"
    # Past its duration it has ended, and still selects the pod it selected.
    assert synced(40.0) == {
        "Selected": "True",
        "AllInjected": "False",
        "AllRecovered": "True",
        "Paused": "False",
    }
    store.delete(PODS, NAMESPACE, "web-1")
    assert synced(41.0)["Selected"] == "False"
