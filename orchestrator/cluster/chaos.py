"""Chaos actions carried out as Chaos Toolkit activities (``chaosk8s`` providers run by ``chaoslib``).

The chaosk8s providers find the cluster through ``KUBECONFIG``; it is set for the duration of one activity
only, under a lock, so the orchestrator's own client (which has its own configuration) is unaffected.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from orchestrator.catalog.faults import ChaosInject
from orchestrator.errors import InjectionError

Json = dict[str, Any]

CRD_KINDS = frozenset({"PodChaos", "NetworkChaos", "StressChaos", "DNSChaos", "IOChaos", "HTTPChaos"})
_ENV_LOCK = threading.Lock()


def plural(kind: str) -> str:
    return kind.lower()


def chaos_object(
    *, inject: ChaosInject, name: str, chaos_namespace: str, app_namespace: str, target: str
) -> Json:
    """The Chaos Mesh object for an entry: its spec with selectors built from the target (no side effects).

    A ``target: {service: NAME}`` in the spec (network faults between two services) becomes a Chaos Mesh
    target selector on that service's pods; a ``target`` written as a Chaos Mesh selector is kept.
    """
    spec: Json = {key: value for key, value in inject.spec.items() if key != "target"}
    spec.setdefault("mode", "all")
    spec["selector"] = {"namespaces": [app_namespace], "labelSelectors": {"app": target}}
    other = inject.spec.get("target")
    if isinstance(other, dict) and "service" in other:
        spec["target"] = {
            "mode": "all",
            "selector": {"namespaces": [app_namespace], "labelSelectors": {"app": other["service"]}},
        }
        spec.setdefault("direction", "to")
    elif isinstance(other, dict) and isinstance(other.get("selector"), dict):
        # A peer written as a Chaos Mesh selector (the catalog's documented form) keeps its selector,
        # confined to the app's namespace when it names none.
        peer = {key: value for key, value in other.items() if key != "selector"}
        peer.setdefault("mode", "all")
        peer["selector"] = {"namespaces": [app_namespace], **other["selector"]}
        spec["target"] = peer
        spec.setdefault("direction", "to")
    elif other is not None:
        spec["target"] = other  # HTTPChaos: which side of the exchange, Request or Response
    return {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": inject.kind,
        "metadata": {"name": name, "namespace": chaos_namespace},
        "spec": spec,
    }


def run_action(*, kubeconfig: Path, module: str, func: str, arguments: Json) -> Any:
    """Run one Chaos Toolkit python-provider action against the cluster of ``kubeconfig``."""
    from chaoslib.activity import run_activity
    from chaoslib.exceptions import ChaosException

    activity = {
        "type": "action",
        "name": f"{module}.{func}",
        "provider": {"type": "python", "module": module, "func": func, "arguments": arguments},
    }
    from kubernetes.config import kube_config

    with _ENV_LOCK:
        previous = os.environ.get("KUBECONFIG")
        # The client library reads KUBECONFIG once, when first imported: its default path is set as well.
        default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
        os.environ["KUBECONFIG"] = str(kubeconfig)
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)
        try:
            return run_activity(activity, {}, {})
        except ChaosException as exc:
            raise InjectionError(f"chaos action {module}.{func} failed: {exc}") from exc
        finally:
            kube_config.KUBE_CONFIG_DEFAULT_LOCATION = default
            if previous is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = previous
