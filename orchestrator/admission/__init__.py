"""Admission: each catalog entry screened alone on a fresh stepped twin under load, with its own Prometheus,
and judged by what the twin showed. The records it writes are catalog data (``fault_catalog/<app>/``)."""
