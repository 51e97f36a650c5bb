"""What the twin lets one observe: container logs, Prometheus metrics, telemetry sampling and traces."""
