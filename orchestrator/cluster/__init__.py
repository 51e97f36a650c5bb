"""The Kubernetes seam: the official-client adapter and the fault mechanisms (rollout, patch, chaos)."""
