"""The twin's container runtime: answers the pod lifecycle's questions from the application model.

Whether an image exists, whether a container starts, dies or is ready is derived from the pod spec as
stored (image, env, limits, probes) and from the chaos effects and working sets of the last model step.
"""

from __future__ import annotations

from typing import Any

from orchestrator.twin.model.engine import AppModel
from orchestrator.twin.model.podlogs import start_message
from orchestrator.twin.model.state import PodView, ViewCache, container_spec
from orchestrator.twin.model.symptoms import probe_ok
from orchestrator.twin.runtime_protocol import ContainerVerdict

# How long a liveness probe on a port nobody listens on takes to get the container killed.
LIVENESS_GRACE_S = 30.0
MAX_CACHED_VIEWS = 4096


class ModelRuntime:
    """``PodRuntime`` over an ``AppModel``; pure reads of the pod and the model's last step.

    Placement (requests against node capacity) is the scheduler's: the runtime never says unschedulable,
    so the scheduler's own reason (Insufficient cpu or memory) is what the events show.
    """

    def __init__(self, model: AppModel) -> None:
        self.model = model
        self._views = ViewCache()

    def _workload(self, pod: dict[str, Any]) -> str:
        labels = pod["metadata"].get("labels") or {}
        if labels.get("app") in self.model.services:
            return str(labels["app"])
        for owner in pod["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == "ReplicaSet":
                return str(owner.get("name", "")).rsplit("-", 1)[0]
        return str(labels.get("app", ""))

    def _view(self, pod: dict[str, Any]) -> PodView:
        shot = self.model.snapshot
        if len(self._views) > MAX_CACHED_VIEWS:
            self._views.clear()  # deleted pods leave their views behind; start afresh now and then
        return self._views.view(
            pod,
            workload=self._workload(pod),
            version=shot.version if shot else "",
            secrets=shot.secrets if shot else {},
            configmaps=shot.configmaps if shot else {},
        )

    def verdict(self, pod: dict[str, Any], container: dict[str, Any], now: float) -> ContainerVerdict:
        model = self.model
        image = str(container.get("image", ""))
        if model.registry.lookup(image) is None:
            return ContainerVerdict(image_known=False, starts=False, ready=False)
        view = self._view(pod)
        name = str(container.get("name", ""))
        failure = model.start_failure_of(view, name)
        service = model.services.get(view.workload)
        if failure is not None and service is not None:
            reason, cause, var = failure
            spec = view.container(name)
            build = model.registry.lookup(image)
            message = start_message(
                service, cause, var, build.log_message if build else None, spec.memory_limit if spec else None
            )
            return ContainerVerdict(
                starts=False,
                exit_reason=reason,
                exit_message=message,
                ready=False,
                exit_code=137 if reason == "OOMKilled" else 1,
            )
        spec = view.container(name) or container_spec(container)  # the view's, as the pod has not changed
        started = view.started.get(name)
        if started is not None:
            dies = self._dies(view, name, started, now)
            if dies is not None:
                return ContainerVerdict(exit_reason=dies[0], exit_message=dies[1], ready=False, exit_code=137)
        warm = service is None or started is None or now - started >= service.model.startup_s
        failing = view.name in model.effects.failing or view.name in model.saturated
        return ContainerVerdict(ready=probe_ok(spec) and warm and not failing)

    def _dies(self, view: PodView, name: str, started: float, now: float) -> tuple[str, str] | None:
        model = self.model
        spec = view.container(name)
        usage = model.usage.get((view.name, name))
        working_set = max(model.working_set(view, name, now), usage.working_set if usage else 0.0)
        if spec is not None and spec.memory_limit is not None and working_set > spec.memory_limit:
            return "OOMKilled", ""
        for pods, names, created in model.effects.container_kills:
            if view.name in pods and (not names or name in names) and started < created:
                return "Error", ""
        if (
            spec is not None
            and spec.liveness_port is not None
            and spec.liveness_port not in spec.ports
            and now - started > LIVENESS_GRACE_S
        ):
            return (
                "Error",
                f"Liveness probe failed: dial tcp {view.ip}:{spec.liveness_port}: connect: "
                "connection refused",
            )
        return None
