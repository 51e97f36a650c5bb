"""The twin: a deterministic simulated Kubernetes cluster running the apps behind the Kubernetes API.

Three rooms and a model: ``apiserver`` answers the Kubernetes API, ``controllers`` turn stored objects
into running pods, endpoints, events and chaos, ``observe`` serves metrics and traces, and
``model`` decides how each service behaves. The top-level modules join them: the object store with its
validation and defaults, the log book, the cluster, clock, runtime, boot and launch.
"""

import sys as _sys

from orchestrator.twin.native import drop_stale as _drop_stale

# Before any compiled module is imported: one that changed since it was compiled runs from source.
if (_stale := _drop_stale()) is not None:
    print(_stale, file=_sys.stderr)
