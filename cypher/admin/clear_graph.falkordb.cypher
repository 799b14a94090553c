// Delete every node and relationship of the graph (kbgraph reset).
MATCH (n)
DETACH DELETE n
