"""What the twin lets one observe beyond the API: Prometheus metrics, telemetry sampling and traces."""
