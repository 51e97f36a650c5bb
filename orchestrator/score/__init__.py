"""Offline scoring of a sealed run bundle, to the letter of METRICS.md (pure functions)."""
