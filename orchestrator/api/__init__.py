"""The control plane: FastAPI app, dashboard and nightly benchmark jobs."""
