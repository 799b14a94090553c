// Delete every node and relationship of the graph (kbgraph reset), in transactions of 1,000 nodes: one
// transaction over a large graph exceeds dbms.memory.transaction.total.max (measured: 2Wiki's 85k nodes).
// Runs as an implicit (auto-commit) transaction, as CALL ... IN TRANSACTIONS requires.
MATCH (n)
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF 1000 ROWS
