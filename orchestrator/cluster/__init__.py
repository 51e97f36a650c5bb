"""The Kubernetes seam: the official-client adapter, field paths into objects, and running Chaos Toolkit."""
