"""The application model of the twin: workload, services, propagation, symptoms derived from state."""
