"""The Neo4j Browser style of kbgraph (kbgraph.grass), shipped as package data; see kbgraph.browse."""
