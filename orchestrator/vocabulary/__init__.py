"""Leaf vocabularies the catalog, the mechanisms, the twin, the agent tools and the scorer share.

Each module here is a table or a parser that imports nothing else of the project, so any layer may use it.
"""
