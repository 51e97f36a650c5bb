"""The twin: a deterministic simulated Kubernetes cluster running the apps behind the Kubernetes API.

Three rooms and a model: ``apiserver`` answers the Kubernetes API, ``controllers`` turn stored objects
into running pods, endpoints, events and chaos, ``observe`` serves logs, metrics and traces, and
``model`` decides how each service behaves. The top-level modules (store, cluster, clock, runtime,
boot, launch) join them.
"""
