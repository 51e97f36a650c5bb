"""Executing Chaos Toolkit activities (``chaosk8s`` providers run by ``chaoslib``) against the cluster.

The chaosk8s providers find the cluster through ``KUBECONFIG``; it is set for the duration of one activity
only, under a lock, so the orchestrator's own client (which has its own configuration) is unaffected.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from orchestrator.errors import InjectionError

_ENV_LOCK = threading.Lock()


def run_activity(activity: dict[str, Any], *, kubeconfig: Path) -> Any:
    """Run one Chaos Toolkit python-provider activity against the cluster of ``kubeconfig``."""
    from chaoslib.activity import run_activity as run
    from chaoslib.exceptions import ChaosException
    from kubernetes.config import kube_config

    provider = activity["provider"]
    what = f"{provider['module']}.{provider['func']}"
    with _ENV_LOCK:
        previous = os.environ.get("KUBECONFIG")
        # The client library reads KUBECONFIG once, when first imported: its default path is set as well.
        default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
        os.environ["KUBECONFIG"] = str(kubeconfig)
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)
        try:
            return run(activity, {}, {})
        except ChaosException as exc:
            raise InjectionError(f"chaos action {what} failed: {exc}") from exc
        finally:
            kube_config.KUBE_CONFIG_DEFAULT_LOCATION = default
            if previous is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = previous
