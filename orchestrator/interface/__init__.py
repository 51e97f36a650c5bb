"""The agent-facing interface: tool registry, policy layer, MCP server and REST mirror."""
