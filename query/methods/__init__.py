"""The query methods, one module each (their registry: kbgraph.query.methods.registry)."""
