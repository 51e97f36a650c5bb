"""The Prometheus seam: server management, the query adapter, the rule-pack evaluator and probes."""
