"""The fault catalog and application topologies: schema, loading, validation, affected scope."""
