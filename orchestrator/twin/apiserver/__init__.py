"""The twin's Kubernetes API server: routes, authentication, validation, patching, discovery, tables."""
