"""The twin: a deterministic simulated Kubernetes cluster running the apps behind the Kubernetes API."""
