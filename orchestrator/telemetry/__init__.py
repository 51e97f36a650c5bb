"""The Prometheus seam: server management, the query adapter, the rule-pack evaluator, probes, and the
observer the runner and admission read Prometheus through."""
