"""Score propagation (PIKE-RAG §5.2.3): the seeds, the graph it walks, the propagation and the rankers (their registry: kbgraph.query.propagation.rankers)."""
