"""The marathon runner: the boundary loop, agent invocation and workspaces."""
